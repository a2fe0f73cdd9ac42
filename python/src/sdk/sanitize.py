"""Payload sanitization before an action leaves the process (spec: "Limits" → payload
sanitization defaults; ``init`` ``sensitive_field_patterns``, ``sensitive_value_patterns``,
``max_payload_string_length``).

A line-by-line port of the service's ``src/policy/sanitize.ts`` (which the TypeScript SDK uses
too), so that the client and the service redact the same way:

- a value is replaced by ``"[REDACTED]"`` when its key contains a field pattern
  (case-insensitive substring, at every depth: note that ``ssn`` also matches ``classname``), or
  when it is a string starting with a value prefix (case-sensitive ``str.startswith``);
- default field patterns ``api_key``, ``password``, ``secret``, ``_token``, ``credit_card``,
  ``ssn``, ``private_key``; default value prefixes ``sk_``, ``pk_``, ``ghp_``, ``hf_``, ``eyJ``,
  ``AKIA`` and every prefix of a secret the service issues (``tg_`` API keys, ``tgs_`` sessions,
  ``tgp_`` public verification tokens, ``tga_`` the admin token); custom patterns are appended,
  never replace;
- numeric LLM token counts (``input_tokens``, ``output_tokens``, ``prompt_tokens``,
  ``completion_tokens``, ``total_tokens``, ``max_tokens``) are kept although ``_token`` matches;
- strings longer than ``max_string_length`` are cut to that length + ``"…[truncated]"``; lengths
  count UTF-16 code units, as the service does (a character outside the BMP counts twice), and a
  cut never splits such a character (one unit fewer instead);
- objects nested more than 20 levels below the root become ``"[TRUNCATED_DEPTH]"``, a reference
  back to an enclosing object ``"[CIRCULAR]"``.

Python values without a JSON counterpart are converted the way ``JSON.stringify`` treats their
closest JavaScript relative: ``datetime`` → ISO 8601 UTC with milliseconds (``...T...Z``),
``date`` → ``YYYY-MM-DD``, NaN and infinities → ``None``, integers outside ±(2**53 − 1) →
decimal strings (JavaScript's bigint rule), tuples and sets → lists, callables dropped (``None``
inside lists), non-string keys → their JSON text. Beyond that (Python only): pydantic models and
dataclasses → their fields, enums → their value, bytes → ``"[N bytes]"``, anything else → ``str()``.
Never mutates its input.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CIRCULAR",
    "DEFAULT_API_KEY_PREFIX",
    "DEFAULT_MAX_STRING_LENGTH",
    "DEFAULT_SENSITIVE_FIELD_PATTERNS",
    "DEFAULT_SENSITIVE_VALUE_PREFIXES",
    "MAX_PAYLOAD_DEPTH",
    "REDACTED",
    "TOKEN_COUNT_KEYS",
    "TRUNCATED_DEPTH",
    "TRUNCATED_SUFFIX",
    "SERVICE_SECRET_PREFIXES",
    "SanitizeResult",
    "cut_text",
    "has_sensitive_prefix",
    "is_sensitive_key",
    "redact_text",
    "sanitize_payload",
]

DEFAULT_SENSITIVE_FIELD_PATTERNS: tuple[str, ...] = (
    "api_key",
    "password",
    "secret",
    "_token",
    "credit_card",
    "ssn",
    "private_key",
)
"""Default field-name substrings (case-insensitive) whose values are redacted."""

DEFAULT_SENSITIVE_VALUE_PREFIXES: tuple[str, ...] = ("sk_", "pk_", "ghp_", "hf_", "eyJ", "AKIA")
"""Default value prefixes (case-sensitive ``startswith``) of strings that are redacted."""

DEFAULT_API_KEY_PREFIX = "tg_"
"""The prefix of the service's API keys; redacted like the default value prefixes."""

SERVICE_SECRET_PREFIXES: tuple[str, ...] = (DEFAULT_API_KEY_PREFIX, "tgs_", "tgp_", "tga_")
"""Every prefix of a secret the service issues: API keys, dashboard sessions, public verification
tokens and the service admin token. All are redacted by default."""

DEFAULT_MAX_STRING_LENGTH = 1000
"""Default maximum string length (UTF-16 code units) before truncation."""

MAX_PAYLOAD_DEPTH = 20
"""Nesting depth below the payload root beyond which objects and arrays are cut."""

REDACTED = "[REDACTED]"
TRUNCATED_SUFFIX = "…[truncated]"
TRUNCATED_DEPTH = "[TRUNCATED_DEPTH]"
CIRCULAR = "[CIRCULAR]"

TOKEN_COUNT_KEYS: tuple[str, ...] = (
    "input_tokens",
    "output_tokens",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "max_tokens",
)
"""LLM usage counts kept although they contain ``_token`` (finite numbers only)."""

_MAX_SAFE_INTEGER = 2**53 - 1
_DROP = object()


@dataclass(frozen=True)
class SanitizeResult:
    """The sanitized payload and what was changed."""

    payload: dict[str, Any]
    redacted: int
    """Values replaced by ``[REDACTED]``."""
    truncated: int
    """Strings shortened, plus objects cut for depth or cycles."""


def is_sensitive_key(key: str, patterns: Iterable[str] = DEFAULT_SENSITIVE_FIELD_PATTERNS) -> bool:
    """Whether ``key`` contains one of ``patterns``, case-insensitively."""
    lower = key.lower()
    return any(p.lower() in lower for p in patterns)


def has_sensitive_prefix(
    value: str,
    prefixes: Iterable[str] = (*DEFAULT_SENSITIVE_VALUE_PREFIXES, *SERVICE_SECRET_PREFIXES),
) -> bool:
    """Whether ``value`` starts with one of ``prefixes``."""
    return any(value.startswith(p) for p in prefixes)


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def cut_text(value: str, max_units: int) -> str:
    """The first ``max_units`` UTF-16 code units of ``value``, one fewer when the cut would split
    a surrogate pair (a lone surrogate can be neither stored nor signed; the service refuses it)."""
    if len(value) <= max_units // 2:
        return value
    data = value.encode("utf-16-le", "surrogatepass")
    if len(data) <= 2 * max_units:
        return value
    end = 2 * max_units
    last = int.from_bytes(data[end - 2 : end], "little")
    if 0xD800 <= last <= 0xDBFF:
        end -= 2
    return data[:end].decode("utf-16-le", "surrogatepass")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_token_count(key: str, value: object) -> bool:
    if not _is_number(value):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return key.lower() in TOKEN_COUNT_KEYS


def _iso(value: _dt.datetime) -> str:
    utc = value.astimezone(_dt.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _key_text(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)
    return str(key)


class _Walker:
    __slots__ = ("ancestors", "field_patterns", "max_string_length", "redacted", "truncated", "value_prefixes")

    def __init__(self, field_patterns: list[str], value_prefixes: list[str], max_string_length: int) -> None:
        self.field_patterns = [p.lower() for p in field_patterns]
        self.value_prefixes = tuple(value_prefixes)
        self.max_string_length = max_string_length
        self.redacted = 0
        self.truncated = 0
        self.ancestors: set[int] = set()

    def string(self, value: str) -> str:
        if value.startswith(self.value_prefixes):
            self.redacted += 1
            return REDACTED
        # len() counts code points, which is never more than UTF-16 code units.
        if len(value) > self.max_string_length or (
            2 * len(value) > self.max_string_length and _utf16_len(value) > self.max_string_length
        ):
            self.truncated += 1
            return cut_text(value, self.max_string_length) + TRUNCATED_SUFFIX
        return value

    def walk(self, value: object, depth: int) -> object:
        if isinstance(value, str):
            return self.string(value)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if isinstance(value, enum.Enum):
                return self.walk(value.value, depth)
            return value if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER else str(value)
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, enum.Enum):
            return self.walk(value.value, depth)
        if isinstance(value, _dt.datetime):
            return _iso(value)
        if isinstance(value, _dt.date):
            return value.isoformat()
        if isinstance(value, (bytes, bytearray, memoryview)):
            return f"[{len(value)} bytes]"
        if callable(value) and not isinstance(value, (Mapping, list, tuple, set, frozenset)):
            return _DROP
        container = self._container(value)
        if container is None:
            return self.string(str(value))
        marker = id(value)
        if marker in self.ancestors:
            self.truncated += 1
            return CIRCULAR
        if depth > MAX_PAYLOAD_DEPTH:
            self.truncated += 1
            return TRUNCATED_DEPTH
        self.ancestors.add(marker)
        try:
            if isinstance(container, Mapping):
                return self.mapping(container, depth)
            out: list[object] = []
            for item in container:
                walked = self.walk(item, depth + 1)
                out.append(None if walked is _DROP else walked)
            return out
        finally:
            self.ancestors.discard(marker)

    @staticmethod
    def _container(value: object) -> Mapping[Any, Any] | list[Any] | tuple[Any, ...] | None:
        if isinstance(value, Mapping):
            return value
        if isinstance(value, (list, tuple)):
            return value
        if isinstance(value, (set, frozenset)):
            return tuple(value)
        dump = getattr(value, "model_dump", None)
        if callable(dump) and hasattr(type(value), "model_fields"):
            dumped = dump()
            return dumped if isinstance(dumped, Mapping) else None
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return None

    def mapping(self, record: Mapping[Any, Any], depth: int) -> dict[str, object]:
        out: dict[str, object] = {}
        for raw_key, value in record.items():
            key = _key_text(raw_key)
            if any(p in key.lower() for p in self.field_patterns) and not _is_token_count(key, value):
                self.redacted += 1
                out[key] = REDACTED
                continue
            walked = self.walk(value, depth + 1)
            if walked is not _DROP:
                out[key] = walked
        return out


def sanitize_payload(
    payload: Mapping[str, Any] | None,
    *,
    field_patterns: Iterable[str] | None = None,
    value_prefixes: Iterable[str] | None = None,
    max_string_length: int = DEFAULT_MAX_STRING_LENGTH,
    api_key_prefix: str = DEFAULT_API_KEY_PREFIX,
) -> SanitizeResult:
    """Returns a sanitized deep copy of ``payload`` (see the module docstring).

    Args:
        payload: the action inputs; None or a non-mapping is treated as empty.
        field_patterns: extra field-name substrings (case-insensitive); empty strings ignored.
        value_prefixes: extra value prefixes (case-sensitive); empty strings ignored.
        max_string_length: maximum string length in UTF-16 code units; a positive integer.
        api_key_prefix: the service's API key prefix (default ``tg_``).

    Raises:
        ValueError: when ``max_string_length`` is not a positive integer.
    """
    if isinstance(max_string_length, bool) or not isinstance(max_string_length, int) or max_string_length < 1:
        raise ValueError(f"max_string_length must be a positive integer, got {max_string_length!r}")
    walker = _Walker(
        [*DEFAULT_SENSITIVE_FIELD_PATTERNS, *(p for p in (field_patterns or ()) if p)],
        [
            *DEFAULT_SENSITIVE_VALUE_PREFIXES,
            api_key_prefix or DEFAULT_API_KEY_PREFIX,
            *SERVICE_SECRET_PREFIXES,
            *(p for p in (value_prefixes or ()) if p),
        ],
        max_string_length,
    )
    if not isinstance(payload, Mapping):
        return SanitizeResult({}, 0, 0)
    walker.ancestors.add(id(payload))
    result = walker.mapping(payload, 0)
    return SanitizeResult(result, walker.redacted, walker.truncated)


# --- free text (chain names, failure messages) ------------------------------------------------

_TEXT_PAIR = re.compile(r"""(["']?)([A-Za-z0-9_.-]+)\1(\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s"',;&]+)""")
"""A ``name=value``, ``name: value`` or ``"name": "value"`` pair inside free text."""
_TEXT_WORD = re.compile(r"""[^\s"'`()<>\[\]{},;:=&]+""")
"""A word of free text: what stands between white space, quotes, brackets and separators."""
_JS_DECIMAL = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_JS_RADIX = re.compile(r"^0([xXoObB])([0-9a-fA-F]+)$")


def _js_number(text: str) -> float:
    """JavaScript's ``Number(text)`` for the texts a pair value can be (NaN when not numeric)."""
    t = text.strip()
    if t == "":
        return 0.0
    if _JS_DECIMAL.match(t):
        return float(t)
    m = _JS_RADIX.match(t)
    if m:
        try:
            return float(int(m.group(2), {"x": 16, "o": 8, "b": 2}[m.group(1).lower()]))
        except ValueError:
            return math.nan
    if t in ("Infinity", "+Infinity", "-Infinity"):
        return math.inf
    return math.nan


def redact_text(
    text: str,
    *,
    field_patterns: Iterable[str] | None = None,
    value_prefixes: Iterable[str] | None = None,
) -> str:
    """Redacts secrets inside free text (chain names, failure messages) with the payload rules
    applied to its parts, as the service's ``redactText`` does:

    - a ``name=value`` or ``name: value`` pair (quotes allowed) whose name contains a field pattern
      has its value replaced by ``[REDACTED]`` (a number under an LLM token-count name is kept);
    - any word that starts with a value prefix (the defaults, every prefix the service issues,
      custom ones) is replaced by ``[REDACTED]``.
    """
    fields = [p.lower() for p in (*DEFAULT_SENSITIVE_FIELD_PATTERNS, *(p for p in (field_patterns or ()) if p))]
    prefixes = (
        *DEFAULT_SENSITIVE_VALUE_PREFIXES,
        *SERVICE_SECRET_PREFIXES,
        *(p for p in (value_prefixes or ()) if p),
    )

    def pair(m: re.Match[str]) -> str:
        q, name, sep, value = m.group(1), m.group(2), m.group(3), m.group(4)
        lower = name.lower()
        if not any(p in lower for p in fields) or _is_token_count(name, _js_number(value)):
            return m.group(0)
        quote = value[0] if value[:1] in ('"', "'") else ""
        return f"{q}{name}{q}{sep}{quote}{REDACTED}{quote}"

    def word(m: re.Match[str]) -> str:
        w = m.group(0)
        return REDACTED if w != REDACTED and w.startswith(prefixes) else w

    return _TEXT_WORD.sub(word, _TEXT_PAIR.sub(pair, text))
