"""The hub bridge: a Kubernetes API server's OCM objects and ClusterProfiles onto the topics
(`source`), run as the `fleetplace hub` worker (`worker`). docs/hub.md describes it."""
