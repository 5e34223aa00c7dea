"""The live queue tree of one partition: configured queues plus those placements created.

Lookups are by lower-cased full path through one dict (YuniKorn walks the tree level by
level; the answer is the same because every stored path is lower-case).

The tree changes by `create`, `apply_config` (a reload) and `release`. After a reload or a
removal anything decided on the old tree may be stale. A creation only adds queues, and can
only change a decision that looked for one of them and found nothing — so while `absent` is
a list, every lookup that finds nothing notes its path there, and a placer can forget just
the decisions that depended on a path that has since been created.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from fleetplace.shared.queueing._acl import ACL, NOBODY
from fleetplace.shared.queueing._names import RECOVERY_QUEUE, ROOT, go_lower


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A configured queue after validation. `name` is lower-cased; `configured_name` is kept for
    the static path check, which compares names as written."""

    name: str
    configured_name: str
    parent_flag: bool
    submit_acl: ACL
    admin_acl: ACL
    children: tuple[QueueSpec, ...] = ()


class QueueNode:
    """One queue. Dynamic queues (`managed` false) carry no ACLs; their ancestors decide."""

    __slots__ = (
        "admin_acl",
        "applications",
        "children",
        "draining",
        "is_leaf",
        "managed",
        "name",
        "parent",
        "path",
        "submit_acl",
        "submitters",
    )

    def __init__(self, name: str, parent: QueueNode | None, *, is_leaf: bool, managed: bool) -> None:
        self.name = name
        self.parent = parent
        self.path: str = name if parent is None else f"{parent.path}.{name}"
        self.is_leaf = is_leaf
        self.managed = managed
        self.draining = False
        self.submit_acl: ACL = NOBODY
        self.admin_acl: ACL = NOBODY
        # everyone the submit check admits here: this queue's and its ancestors' ACLs together
        self.submitters: ACL = NOBODY if parent is None else _inherited(self.path, NOBODY, parent)
        self.children: dict[str, QueueNode] = {}
        self.applications = 0

    def apply_spec(self, spec: QueueSpec) -> None:
        # YuniKorn's applyConf: a dynamic queue becomes managed, a draining one runs again, the
        # type follows the config (parent flag or configured children), ACLs are replaced.
        self.managed = True
        self.draining = False
        self.is_leaf = not (spec.parent_flag or spec.children)
        self.submit_acl = spec.submit_acl
        self.admin_acl = spec.admin_acl

    def __repr__(self) -> str:
        kind = "leaf" if self.is_leaf else "parent"
        state = " draining" if self.draining else ""
        return f"<QueueNode {self.path} {kind}{'' if self.managed else ' dynamic'}{state}>"


class QueueTree:
    def __init__(self, root_spec: QueueSpec) -> None:
        self.root = QueueNode(ROOT, None, is_leaf=False, managed=True)
        self.nodes: dict[str, QueueNode] = {ROOT: self.root}
        self.absent: list[str] | None = None
        self.apply_config(root_spec)

    def get(self, path: str) -> QueueNode | None:
        node = self.nodes.get(path)
        if node is None:
            lowered = go_lower(path)
            if lowered != path:
                node = self.nodes.get(lowered)
            if node is None and self.absent is not None:
                self.absent.append(lowered)
        return node

    def deepest_existing(self, path: str) -> QueueNode:
        """The queue itself if it exists, else its deepest existing ancestor (at worst root)."""
        nodes = self.nodes
        current = go_lower(path)
        while True:
            node = nodes.get(current)
            if node is not None:
                return node
            if self.absent is not None:
                self.absent.append(current)
            cut = current.rfind(".")
            if cut < 0:
                return self.root
            current = current[:cut]

    def create(self, parent: QueueNode, levels: Sequence[str]) -> list[QueueNode]:
        """Create dynamic queues below `parent`: parents for all levels but the last, a leaf
        for the last. Names are stored lower-case. Returns the new queues, top
        down (see the module docstring for what a creation can change)."""
        created = []
        node = parent
        for i, level in enumerate(levels):
            node = QueueNode(go_lower(level), node, is_leaf=i == len(levels) - 1, managed=False)
            assert node.parent is not None
            node.parent.children[node.name] = node
            self.nodes[node.path] = node
            created.append(node)
        return created

    def apply_config(self, root_spec: QueueSpec) -> None:
        """Reload: configured queues are added or updated, a dynamic queue that is
        now configured becomes managed, a configured queue that is gone drains (with its
        configured descendants), dynamic queues outside the config are left alone."""
        self.root.apply_spec(root_spec)
        self.root.is_leaf = False  # the root is always a parent
        self._apply_children(self.root, root_spec.children)
        self._prune(self.root)
        _refresh_submitters(self.root)

    def _apply_children(self, node: QueueNode, specs: tuple[QueueSpec, ...]) -> None:
        configured = set()
        for spec in specs:
            child = node.children.get(spec.name)
            if child is None:
                child = QueueNode(spec.name, node, is_leaf=True, managed=True)
                node.children[spec.name] = child
                self.nodes[child.path] = child
            child.apply_spec(spec)
            configured.add(spec.name)
            self._apply_children(child, spec.children)
        for name, child in node.children.items():
            if name not in configured:
                _mark_for_removal(child)

    def release(self, node: QueueNode) -> bool:
        """An application left `node`: drop the queues that are now empty and may go — draining
        ones, and dynamic ones (YuniKorn's cleanup of unmanaged queues). True if any went."""
        node.applications -= 1
        removed = False
        current: QueueNode | None = node
        while current is not None and current.parent is not None and self._removable(current):
            parent = current.parent
            del parent.children[current.name]
            del self.nodes[current.path]
            removed = True
            current = parent
        return removed

    @staticmethod
    def _removable(node: QueueNode) -> bool:
        return (node.draining or not node.managed) and not node.children and node.applications == 0

    def _prune(self, node: QueueNode) -> None:
        # after a reload only draining queues go; an empty dynamic queue stays until released
        for child in list(node.children.values()):
            self._prune(child)
            if child.draining and not child.children and child.applications == 0:
                del node.children[child.name]
                del self.nodes[child.path]

    def __iter__(self) -> Iterator[QueueNode]:
        return iter(self.nodes.values())


def _inherited(path: str, own: ACL, parent: QueueNode | None) -> ACL:
    # YuniKorn walks up from the queue: submit or admin ACL, else the parent's. The recovery
    # queue answers no and stops the walk, so below it only the queues' own ACLs count.
    if path == RECOVERY_QUEUE:
        return NOBODY
    return own if parent is None else own.union(parent.submitters)


def _refresh_submitters(node: QueueNode) -> None:
    node.submitters = _inherited(node.path, node.submit_acl.union(node.admin_acl), node.parent)
    for child in node.children.values():
        _refresh_submitters(child)


def _mark_for_removal(node: QueueNode) -> None:
    # YuniKorn's MarkQueueForRemoval: a no-op on a dynamic queue, recursive over managed children
    if not node.managed:
        return
    node.draining = True
    for child in node.children.values():
        _mark_for_removal(child)
