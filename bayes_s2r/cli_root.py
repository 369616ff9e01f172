"""The root of the `bayes-s2r` command line: the Typer `app`, its `--devices` option, the console.

Every command module registers its commands on `app`; `bayes_s2r.cli.main` imports them all.
Bad input anywhere (an `InputError`) ends the command with a one-line message on stderr and
exit code 2, never a traceback: the root group catches it, so new commands get this
behaviour without doing anything.
"""

from __future__ import annotations

from typing import Annotated

import click
import typer
from typer.core import TyperGroup

from bayes_s2r.errors import InputError

__all__ = ["app", "root_devices"]


class _Group(TyperGroup):
    """A Typer group that turns `InputError` into a one-line message and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except InputError as e:
            click.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None


# rich_markup_mode=None: help texts are plain text, so "[budget]" or "E[max(gain, 0)]"
# print as written instead of being read as console markup.
app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    help="Where should the next unit of sim-to-real budget go?",
    epilog="Compiled functions are kept between runs in $XDG_CACHE_HOME/bayes_s2r/jax (default "
           "~/.cache/bayes_s2r/jax); set BAYES_S2R_COMPILE_CACHE to another folder, or to off.",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    devices: Annotated[int | None, typer.Option(
        "--devices", envvar="BAYES_S2R_DEVICES", min=1,
        help="Devices to split the look-ahead draws of `decide` and MCMC chains over. On a "
             "CPU this many host devices are made (they share the cores).")] = None,
) -> None:
    """Where should the next unit of sim-to-real budget go?"""
    if devices is None:
        return
    from bayes_s2r.distributed.devices import configure_host_devices

    configure_host_devices(devices)  # commands read the count from the root context's params


def _console():
    from rich.console import Console

    # soft_wrap: long plain-text rows (decision tables) are never folded, so piped or
    # redirected output keeps one row per line; rich tables still fit the width.
    return Console(highlight=False, soft_wrap=True)


def root_devices(ctx: typer.Context) -> int | None:
    """The root option `--devices`, for the commands that split work over devices."""
    return ctx.find_root().params.get("devices")
