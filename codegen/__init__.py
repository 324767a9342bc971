"""wirestream's IDL compiler: YAML -> validated, typed model -> Python (jinja2 + black)."""

from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.frontend.errors import IdlError

__all__ = ["IdlError", "load_protocol"]
