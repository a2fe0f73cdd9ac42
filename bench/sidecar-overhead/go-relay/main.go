// Command go-relay is bench/sidecar-overhead's Go relay floor (ADR 0011, "Proposal"): the same
// relay as minimal.ts, written in Go, to show what the hops of a governed call cost a native
// process on this machine. A bare grpc-go server of the ToolGateway proto (gatewaypb, generated
// from proto/ by gen.sh) whose Invoke POSTs the action to a bare decision server (DECISION_URL:
// bench/record-action/minimal.ts), then, when `upstream` is set, the payload to the tool
// (UPSTREAM_URL), over net/http keep-alive, and answers "allow". OpenChain answers a fixed chain
// id; the other methods are UNIMPLEMENTED. No validation, sanitizing, policy, metrics or
// outcome reports.
//
//	DECISION_URL=http://… UPSTREAM_URL=http://… [PORT=50062] go-relay
//
// Listens on 127.0.0.1 on a free port, or with PORT on all addresses on that port (bench/cluster
// runs it beside the agent, its image built by test/cluster/build-test-images.sh); prints
// `host:port` on stdout once listening; stops on SIGTERM. Built by scripts/build-go-relay.sh into
// a cache outside the repository.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "tollgate.dev/bench/go-relay/gatewaypb"
)

// relay implements OpenChain and Invoke; the embedded Unimplemented server answers the rest.
type relay struct {
	pb.UnimplementedToolGatewayServer
	client       *http.Client
	decisionBase string // scheme://host of DECISION_URL
	upstreamURL  string
}

// action is the body POSTed to the decision server, as minimal.ts sends it.
type action struct {
	AgentName  string          `json:"agent_name"`
	ActionName string          `json:"action_name"`
	Payload    json.RawMessage `json:"payload"`
}

func (r *relay) OpenChain(context.Context, *pb.OpenChainRequest) (*pb.OpenChainResponse, error) {
	return &pb.OpenChainResponse{ChainId: "minimal"}, nil
}

func (r *relay) Invoke(ctx context.Context, req *pb.InvokeRequest) (*pb.InvokeResponse, error) {
	args, err := protojson.Marshal(req.GetPayload())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	body, err := json.Marshal(action{req.GetAgentName(), req.GetActionName(), args})
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if _, err := r.post(ctx, r.decisionBase+"/v1/chains/"+req.GetChainId()+"/actions", body); err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	decision := &pb.Decision{PolicyDecision: "allow"}
	if req.GetUpstream() == "" {
		return &pb.InvokeResponse{Decision: decision}, nil
	}
	result, err := r.post(ctx, r.upstreamURL, args)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &pb.InvokeResponse{Decision: decision, Forwarded: true, ResultJson: string(result), UpstreamStatus: 200}, nil
}

// post sends a JSON POST on a pooled keep-alive connection and returns the body, which must be
// a 200 with valid JSON (as parts.ts's directCall checks).
func (r *relay) post(ctx context.Context, target string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "application/json")
	res, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	// Read to the end even on an error status, so the connection goes back to the pool.
	text, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream answered %d", res.StatusCode)
	}
	if !json.Valid(text) {
		return nil, fmt.Errorf("upstream answered invalid JSON")
	}
	return text, nil
}

func main() {
	decisionURL, err := url.Parse(os.Getenv("DECISION_URL"))
	if err != nil || decisionURL.Host == "" {
		fmt.Fprintln(os.Stderr, "go-relay: DECISION_URL must be an http URL")
		os.Exit(2)
	}
	upstreamURL := os.Getenv("UPSTREAM_URL")
	if u, err := url.Parse(upstreamURL); err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "go-relay: UPSTREAM_URL must be an http URL")
		os.Exit(2)
	}
	// As minimal.ts's agent: keep-alive, up to 64 connections per host, idle ones closed after 30 s.
	transport := &http.Transport{
		MaxIdleConns:        128,
		MaxIdleConnsPerHost: 64,
		MaxConnsPerHost:     64,
		IdleConnTimeout:     30 * time.Second,
	}
	addr := "127.0.0.1:0"
	if port := os.Getenv("PORT"); port != "" {
		addr = "0.0.0.0:" + port
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-relay:", err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	pb.RegisterToolGatewayServer(server, &relay{
		client:       &http.Client{Transport: transport},
		decisionBase: decisionURL.Scheme + "://" + decisionURL.Host,
		upstreamURL:  upstreamURL,
	})
	sigterm := make(chan os.Signal, 1)
	signal.Notify(sigterm, syscall.SIGTERM)
	go func() {
		<-sigterm
		server.GracefulStop()
	}()
	fmt.Println(lis.Addr().String())
	if err := server.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "go-relay:", err)
		os.Exit(1)
	}
}
