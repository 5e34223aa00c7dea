"""`fleetplace explorer`: a read-only web app over the decision history (docs/explorer.md)."""

from fleetplace.services.explorer.app import create_app
from fleetplace.services.explorer.server import Explorer, TokenRequired
from fleetplace.services.explorer.store import ExplorerStore

__all__ = ["Explorer", "ExplorerStore", "TokenRequired", "create_app"]
