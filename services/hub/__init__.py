"""The hub bridge: a Kubernetes API server's OCM objects onto the topics, and the decisions back
onto the hub as PlacementDecisions (docs/hub.md)."""
