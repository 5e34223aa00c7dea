"""structlog configuration: JSON lines (or a console renderer), stdlib logs routed through the same pipeline.

Workers bind the domain keys they work on (`placement=`, `cluster=`, `topic=`)
with `structlog.contextvars.bound_contextvars` or `log.bind`. Any key that looks
like a secret is masked before rendering, and `SecretStr` renders as stars.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import orjson
import structlog
from pydantic import SecretStr

from fleetplace.shared.settings import LogFormat, LogLevel, Settings

MASK = "**********"
_SECRET_KEY = re.compile(r"(password|passwd|secret|token|authorization|api[_-]?key|credential)", re.I)


def redact_secrets(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Mask values of secret-looking keys, and SecretStr anywhere at the top level."""
    for key, value in event_dict.items():
        if isinstance(value, SecretStr) or (value and _SECRET_KEY.search(key)):
            event_dict[key] = MASK
    return event_dict


def _json_default(obj: object) -> object:
    if isinstance(obj, SecretStr):
        return MASK
    return str(obj)


def _render_json(obj: Any, **_kwargs: Any) -> str:
    return orjson.dumps(obj, default=_json_default, option=orjson.OPT_UTC_Z).decode()


def configure_logging(
    level: LogLevel | str = "info",
    fmt: LogFormat = "json",
    *,
    stream: TextIO | None = None,
) -> None:
    """Configure structlog and the stdlib root logger (aiokafka, aiohttp) to write one pipeline to `stream`."""
    numeric_level = logging.getLevelNamesMapping()[level.upper()]
    shared_processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    renderer: structlog.typing.Processor
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    else:
        renderer = structlog.processors.JSONRenderer(serializer=_render_json)

    structlog.configure(
        processors=[
            *shared_processors,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared_processors,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_fleetplace", False):
            root.removeHandler(old)
    handler._fleetplace = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(numeric_level)
    # aiokafka is chatty at INFO about every (re)connect and rebalance step.
    logging.getLogger("aiokafka").setLevel(max(numeric_level, logging.WARNING))


def configure_from_settings(settings: Settings, *, stream: TextIO | None = None) -> None:
    configure_logging(settings.log_level, settings.log_format, stream=stream)


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)
