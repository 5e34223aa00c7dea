"""The machinery behind :mod:`fleetplace.shared.placement.cel`: a CEL parser, checker and interpreter.

Importing the library modules registers their functions; keep the list complete.
"""

from fleetplace.shared.placement._cel import ext_format, ext_kubernetes, ext_ocm, ext_strings, stdlib

__all__ = ["ext_format", "ext_kubernetes", "ext_ocm", "ext_strings", "stdlib"]
