"""wirestream's IDL compiler: YAML -> validated, typed model -> Python (jinja2 + black)."""

from codegen.build import load_protocol
from codegen.errors import IdlError

__all__ = ["IdlError", "load_protocol"]
