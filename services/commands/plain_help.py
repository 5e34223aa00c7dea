"""Help that speaks the command line's language, not Python's.

Typer labels a value by its Python annotation (`<bool>`, `<list[str]>`, `<str>`) and a required
argument with braces (`{paths}`). The root command group rewrites every parameter of every
command once, when the command tree is built: a flag shows no value, an option shows what it
takes (`TEXT`, `INTEGER`, `PATH`, `a|b|c`) unless its own metavar says better, and an argument
shows its name in capitals, as click and kubectl write them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

__all__ = ["PlainHelpGroup"]


class _PlainArgument(TyperArgument):
    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def _rich_display_name(self) -> str:
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the name says it


def _value_name(param: TyperOption) -> str:
    desc = param.type_descriptor
    if desc.is_choice and desc.choices:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
    if desc.is_path:
        return "PATH"
    annotation = desc.annotation
    if annotation is int:
        return "INTEGER"
    if annotation is float:
        return "NUMBER"
    return "TEXT"


def _plain_help_option(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def help_option(ctx: Any) -> Any:
        option = original(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    return help_option


def _plain(command: Any) -> None:
    command.get_help_option = _plain_help_option(command.get_help_option)
    for param in command.params:
        if isinstance(param, TyperArgument):
            if type(param) is TyperArgument:
                param.__class__ = _PlainArgument  # the same argument, named the plain way
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
        elif isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = "" if param.is_flag else _value_name(param)
    for sub in getattr(command, "commands", {}).values():
        _plain(sub)


class PlainHelpGroup(TyperGroup):
    """The root group: rewrites the labels of every parameter below it (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain(self)
