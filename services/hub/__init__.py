"""The hub bridge: a Kubernetes API server's OCM objects and ClusterProfiles onto the topics
(`source`), run as the `fleetplace hub` worker (`worker`), and the decisions written back onto the
hub as PlacementDecisions (`writeback`, through `sink`). docs/hub.md describes it."""
