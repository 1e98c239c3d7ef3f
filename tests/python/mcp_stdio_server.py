"""A FastMCP server over stdio for tests/python/test_mcp_stdio.py (issue 46), started by the
gateway from its config file (`[[mcp.servers]] command = [python, this file, KIND]`):

    tools      echo, env (a variable of its own environment), limits (its rlimits), pid, slow, crash
               (the process exits), card (a result with a card number)
    prompts    greet(name), leak (a card number in its text)
    resources  file:///readme.txt, file:///card.txt (a card number), note://{id} (a template)

Every text names KIND, so a test can tell which server answered.
"""

from __future__ import annotations

import os
import resource
import sys

from fastmcp import FastMCP

CARD = "4111 1111 1111 1111"
KIND = sys.argv[1]
server = FastMCP(KIND)


@server.tool
def echo(text: str) -> str:
    """Echoes the text."""
    return f"{KIND} echo: {text}"


@server.tool
def env(name: str) -> str:
    """A variable of the server's own environment, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool
def limits() -> str:
    """The process's address-space and CPU-time caps."""
    return f"{resource.getrlimit(resource.RLIMIT_AS)[0]} {resource.getrlimit(resource.RLIMIT_CPU)[0]}"


@server.tool
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool
async def slow(seconds: float, mark: str = "") -> str:
    """Answers after `seconds`; first creates the file `mark`, if named (the call has arrived)."""
    import asyncio

    if mark:
        open(mark, "w").close()
    await asyncio.sleep(seconds)
    return "late"


@server.tool
def crash() -> str:
    """Ends the process without an answer."""
    os._exit(3)


@server.tool
def card() -> str:
    """A result carrying a card number."""
    return f"{KIND} card {CARD}"


@server.prompt
def greet(name: str) -> str:
    """A greeting."""
    return f"Hello {name}, from {KIND}"


@server.prompt
def leak() -> str:
    """A prompt carrying a card number."""
    return f"{KIND} pays with {CARD}"


@server.resource("file:///readme.txt")
def readme() -> str:
    """The readme."""
    return f"readme of {KIND}"


@server.resource("file:///card.txt")
def card_file() -> str:
    """A file carrying a card number."""
    return f"{KIND} card file {CARD}"


@server.resource("note://{id}")
def note(id: str) -> str:  # noqa: A002 (the template's parameter)
    """A note by id."""
    return f"note {id} of {KIND}"


if __name__ == "__main__":
    server.run(transport="stdio", show_banner=False)
