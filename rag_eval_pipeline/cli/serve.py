"""`rag-eval serve [--host H] [--port N]`: the tech spec's HTTP API under /api/v1/eval on the workspace
(api/app.py), and `rag-eval tokens create|list|revoke`: the bearer tokens it takes (api/tokens.py)."""

from __future__ import annotations

import argparse
import sys

from ..api.tokens import ROLES, TokenStore
from .output import add_format_argument, render_records
from .registry import CommandContext, add_command

DEFAULT_PORT = 8765


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = add_command(commands, "serve")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every interface, "
        "in plain HTTP: put a TLS proxy in front)",
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0 picks a free one"
    )
    tokens = add_command(commands, "tokens")
    actions = tokens.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="a new token: printed once, stored only as a hash")
    create.add_argument("name", help="who holds it: the runs it starts are triggered by this name")
    create.add_argument(
        "--role", required=True, choices=ROLES, help="viewer: GET only; admin, super-user: all"
    )
    listed = actions.add_parser("list", help="the tokens' names, roles and creation times (never the token)")
    add_format_argument(listed)
    revoke = actions.add_parser("revoke", help="remove a token: requests with it get 401 from then on")
    revoke.add_argument("name")


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    store = TokenStore(context.root)
    if args.command == "tokens":
        if args.action == "create":
            token = store.create(args.name, args.role)
            print(
                f"token {args.name} ({args.role}) created; it is shown this once, keep it secret:",
                file=sys.stderr,
            )
            print(token)
            return 0
        if args.action == "revoke":
            revoked = store.revoke(args.name)
            print(f"token {revoked.name} ({revoked.role}) revoked")
            return 0
        tokens = [t.record() for t in store.tokens()]
        print(render_records(tokens, args.format, ["name", "role", "created"]))
        return 0
    return _serve(args, context)


def _serve(args: argparse.Namespace, context: CommandContext) -> int:
    from ..annotate.server import LOOPBACK, bind_socket, serve, url_of
    from ..api.app import PREFIX, create_app

    sock = bind_socket(args.host, args.port)
    url = url_of(sock).rstrip("/") + PREFIX
    where = (
        "127.0.0.1, this machine only: --host 0.0.0.0 listens on every interface"
        if args.host == LOOPBACK
        else f"{args.host}, in plain HTTP: every machine that reaches it can try tokens; put a TLS proxy in front"
    )
    if not store_has_tokens(context):
        print("note: no token yet: `rag-eval tokens create NAME --role admin` makes one", file=sys.stderr)
    print(f"HTTP API on workspace {context.root}: {url} (listening on {where}; Ctrl-C stops it)", flush=True)
    print(f"OpenAPI document: {url}/openapi.json", flush=True)
    serve(create_app(context.root), sock)
    print("stopped", file=sys.stderr)
    return 0


def store_has_tokens(context: CommandContext) -> bool:
    return bool(TokenStore(context.root).tokens())
