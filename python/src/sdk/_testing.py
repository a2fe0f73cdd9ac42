"""Test-only helpers of the SDK: not part of its public API (not exported by ``sdk``).

``reset_config()`` forgets the process-wide configuration stored by ``sdk.init``, so that each
test starts uninitialized. Takes no arguments, returns None, never raises.
"""

from __future__ import annotations

from .config import _reset_config as reset_config

__all__ = ["reset_config"]
