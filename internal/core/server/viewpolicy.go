package server

import "net/http"

// BridgePolicy widens the policy headers of a mini-app bridge document (BridgePath) for the
// request that asks for it, after the bridge's default policy is set: a door whose documents the
// bridge frames (the extension door's MCP Apps views) adds what it granted them. It must be safe
// for concurrent use, and add only what the request's own grant names.
type BridgePolicy func(h http.Header, r *http.Request)

// AddBridgePolicy adds p to the bridge's policies. Call it before the server serves.
func (s *Server) AddBridgePolicy(p BridgePolicy) { s.bridgePolicies = append(s.bridgePolicies, p) }
