"""The `bayes-s2r` command line.

`app` is the root Typer application (`bayes_s2r.cli_root`); each command group lives in its
own function or sub-application (`ledger` here, the others in `cli_decide` and
`cli_campaign`, which `main` imports).

Commands import their heavy dependencies (JAX, NumPyro) inside the function body, so
`bayes-s2r --help` and the ledger commands do not pay for them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from bayes_s2r.cli_root import _console, app
from bayes_s2r.errors import InputError

__all__ = ["app", "ledger_app", "main", "use_compile_cache"]


ledger_app = typer.Typer(
    no_args_is_help=True, help="The evidence ledger: create, import, show, export.",
    rich_markup_mode=None,
)
app.add_typer(ledger_app, name="ledger")


def _suffix(file: Path, field: str) -> str:
    suffix = file.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise InputError(field, str(file), "a file name ending in .csv or .json")
    return suffix


LedgerPath = Annotated[Path, typer.Argument(help="The ledger's SQLite file.", show_default=False)]


# ----------------------------------------------------------------------------- ledger
@ledger_app.command("init")
def ledger_init(path: LedgerPath) -> None:
    """Create an empty ledger at PATH (an existing one is opened and migrated, not changed)."""
    from bayes_s2r.evidence.ledger import Ledger

    existed = path.exists()
    with Ledger(path) as ledger:
        state = "opened existing" if existed else "created"
        _console().print(
            f"{state} ledger {path} (schema v{ledger.schema_version}, {len(ledger)} records)"
        )


@ledger_app.command("import")
def ledger_import(
    path: LedgerPath,
    file: Annotated[
        Path, typer.Argument(help="A .csv or .json file of records.", show_default=False)
    ],
    kind: Annotated[
        str | None, typer.Option(help="Record kind of CSV rows without a kind column.")
    ] = None,
    candidates: Annotated[
        Path | None,
        typer.Option(
            help="A candidates TOML file: a record naming a candidate not in it is refused "
            "before anything is stored.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Import the records of FILE into the ledger at PATH: all of them, or none on any error."""
    from bayes_s2r.evidence.ledger import Ledger

    suffix = _suffix(file, "file")
    if suffix == ".json" and kind is not None:
        raise InputError("--kind", kind, "no --kind with a JSON file (each record names its kind)")
    names = None
    if candidates is not None:
        from bayes_s2r.evidence.io import load_candidates

        names = [c.name for c in load_candidates(candidates)]
    with Ledger(path, create=False) as ledger:
        result = (
            ledger.import_csv(file, kind=kind, candidates=names)
            if suffix == ".csv"
            else ledger.import_json(file, candidates=names)
        )
        _console().print(
            f"imported {file}: {result.read} records read, {result.added} new, "
            f"{result.read - result.added} already present; the ledger holds {len(ledger)}"
        )


def _defaults(record) -> dict:
    import dataclasses

    return {f.name: f.default for f in dataclasses.fields(record)}


def _summary(record) -> str:
    """The fields of a record that differ from their defaults, as `name=value` pairs."""
    defaults = _defaults(record)
    return "  ".join(
        f"{k}={v}" for k, v in record.payload().items() if v is not None and v != defaults.get(k)
    )


_HEADERS = {  # short column headers, so a record fits on one line of an 80-column terminal
    "successes_treated": "succ T",
    "episodes_treated": "eps T",
    "successes_control": "succ C",
    "episodes_control": "eps C",
    "successes": "succ",
    "episodes": "eps",
    "executions": "execs",
    "pair_direction": "pair dir",
    "pair_level": "pair lvl",
    "trajectories": "traj",
    "returns_treated": "returns T",
    "returns_control": "returns C",
}


def _short(ident: str) -> str:
    return ident if len(ident) <= 10 else ident[:8] + "…"


@ledger_app.command("show")
def ledger_show(
    path: LedgerPath,
    kind: Annotated[str | None, typer.Option(help="Show only records of this kind.")] = None,
    limit: Annotated[
        int, typer.Option(min=0, help="Show at most the last N records (0: counts only).")
    ] = 20,
) -> None:
    """Show the ledger at PATH: record counts per kind and the most recent records.

    Void records are counted apart and listed with the reason they were taken back.
    """
    from rich import box
    from rich.table import Table

    from bayes_s2r.evidence.ledger import Ledger
    from bayes_s2r.evidence.records import RECORD_TYPES

    with Ledger(path, create=False) as ledger:
        records = ledger.records(kind, include_void=True)
        counts = ledger.counts()
        voided = ledger.voided()
    console = _console()
    title = f"{path}: {sum(counts.values())} records"
    totals = Table(title=title + (f" in use, {len(voided)} void" if voided else ""))
    totals.add_column("kind")
    totals.add_column("records", justify="right")
    for k, n in counts.items():
        totals.add_row(k, str(n))
    if voided:
        totals.add_row("(void)", str(len(voided)))
    console.print(totals)
    shown = records[-limit:] if limit else []
    if not shown:
        return
    first = len(records) - len(shown) + 1
    table = Table(
        title=f"{kind or 'all'} records {first}-{len(records)} of {len(records)}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("#", justify="right")
    any_void = any(r.id in voided for r in shown)

    def void_cell(rec) -> list[str]:  # void records stay listed, marked with the reason
        return [f"VOID: {voided[rec.id]['why']}" if rec.id in voided else ""] if any_void else []

    if kind is None:
        table.add_column("kind")
        table.add_column("id")
        table.add_column("fields")
        if any_void:
            table.add_column("void", overflow="fold")
        for i, rec in enumerate(shown, first):
            table.add_row(str(i), rec.KIND, _short(rec.id), _summary(rec), *void_cell(rec))
    else:  # one column per field, leaving out fields at their default in every shown record
        defaults = _defaults(shown[0])
        fields = [
            f
            for f in RECORD_TYPES[shown[0].KIND].FIELDS
            if any(r.payload()[f] != defaults[f] for r in shown)
        ]
        named = any(r.id != r.content_hash() for r in shown)  # ids that are not content hashes
        if named:
            table.add_column("id", no_wrap=True)
        for f in fields:
            table.add_column(_HEADERS.get(f, f), overflow="fold")
        if any_void:
            table.add_column("void", overflow="fold")
        for i, rec in enumerate(shown, first):
            payload = rec.payload()
            cells = ["" if payload[f] is None else str(payload[f]) for f in fields]
            table.add_row(str(i), *([_short(rec.id)] if named else []), *cells, *void_cell(rec))
    console.print(table)


@ledger_app.command("void")
def ledger_void(
    path: LedgerPath,
    record_id: Annotated[
        str, typer.Argument(metavar="ID", help="The id of the record to take back.", show_default=False)
    ],
    why: Annotated[
        str, typer.Option("--why", help="Why the record is taken back (kept with it).", show_default=False)
    ],
) -> None:
    """Take record ID of the ledger at PATH back: kept and shown, marked void, left out of fits.

    Nothing is deleted; use it for a record that should never have been stored (a mistyped
    candidate name, a run imported twice under different ids).
    """
    from bayes_s2r.evidence.ledger import Ledger

    with Ledger(path, create=False) as ledger:
        record = ledger.void(record_id, why)
        _console().print(
            f"voided {record.KIND} {record_id} ({_summary(record)}): {why}; "
            f"the ledger holds {len(ledger)} records in use"
        )


@ledger_app.command("export")
def ledger_export(
    path: LedgerPath,
    file: Annotated[
        Path, typer.Argument(help="The .csv or .json file to write.", show_default=False)
    ],
) -> None:
    """Write every record of the ledger at PATH to FILE (CSV or JSON), which re-imports as is."""
    from bayes_s2r.evidence.ledger import Ledger

    suffix = _suffix(file, "file")
    with Ledger(path, create=False) as ledger:
        n = ledger.export_csv(file) if suffix == ".csv" else ledger.export_json(file)
    _console().print(f"exported {n} records to {file}")


def use_compile_cache(env=None) -> str | None:
    """Point JAX's persistent compilation cache at the user's cache folder (before JAX starts).

    Each command is a new process; without the cache every `decide` or `demo` compiles the
    samplers and the look-ahead again (on a 2-core CPU, 4 s of the NUTS sampler and 0.8 s of
    the look-ahead on the example ledger). The folder is $XDG_CACHE_HOME/bayes_s2r/jax, else
    ~/.cache/bayes_s2r/jax. A cache the user configured (JAX_COMPILATION_CACHE_DIR) is left
    alone; BAYES_S2R_COMPILE_CACHE=off turns it off, any other value is the folder to use.
    Programs that take 0.2 s or more to compile are kept (JAX's default keeps those over 1 s,
    which would leave out the look-ahead).

    Returns:
        The folder, or None when the cache is off.
    """
    env = os.environ if env is None else env
    if "JAX_COMPILATION_CACHE_DIR" in env:
        return env["JAX_COMPILATION_CACHE_DIR"]
    choice = env.get("BAYES_S2R_COMPILE_CACHE", "")
    if choice.lower() == "off":
        return None
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"  # a relative one is ignored
    folder = choice or str(base / "bayes_s2r" / "jax")
    env["JAX_COMPILATION_CACHE_DIR"] = folder
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
    return folder


def main() -> None:
    """Entry point of the `bayes-s2r` script."""
    use_compile_cache()
    import bayes_s2r.cli_campaign
    import bayes_s2r.cli_decide  # noqa: F401  (registers fit, decide, report)

    app()


if __name__ == "__main__":
    main()
