"""wirestream's IDL compiler: YAML -> validated, typed model -> Python (jinja2 + black)."""

from wirestream.codegen.build import load_protocol
from wirestream.codegen.errors import IdlError

__all__ = ["IdlError", "load_protocol"]
