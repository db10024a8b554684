"""``storm-py upload-credentials TOPOLOGY [-f FILE] [KEY VALUE ...]`` (Storm's ``storm upload-credentials``) and
the properties-file reading it needs (pure).

The credentials given (the file's, then the pairs on the command line, which win) replace the topology's; its
workers hand them to every spout and bolt defining ``set_credentials``.  ``storm-py admin creds TOPOLOGY`` lists
the keys a topology has.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.errors import StormPyError

_SEPARATORS = "=:"


def read_properties(text: str) -> dict[str, str]:
    """The entries of a Java-style properties text: ``key=value``, ``key: value`` or ``key value`` per line;
    blank lines and lines starting with ``#`` or ``!`` are skipped; a line ending in an odd number of
    backslashes continues on the next; a key alone has the empty value."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = line[:-1]
            continue
        pending = ""
        key, value = _split_entry(line.strip())
        out[key] = value
    if pending:
        key, value = _split_entry(pending.strip())
        out[key] = value
    return out


def _split_entry(line: str) -> tuple[str, str]:
    """A logical line's key (up to the first ``=``, ``:`` or blank) and value (after one separator)."""
    for i, ch in enumerate(line):
        if ch in _SEPARATORS:
            return line[:i], line[i + 1 :].strip()
        if ch.isspace():
            rest = line[i:].lstrip()
            return line[:i], (rest[1:] if rest[:1] in tuple(_SEPARATORS) else rest).strip()
    return line, ""


def pairs(args: tuple[str, ...]) -> dict[str, str]:
    """``KEY VALUE ...`` as a map; an odd count is a :class:`click.UsageError` naming the key without a value."""
    if len(args) % 2:
        raise click.UsageError(f"credentials come as KEY VALUE pairs: {args[-1]!r} has no value "
                               f"({len(args)} arguments given, an even number is needed)")  # fmt: skip
    return {args[i]: args[i + 1] for i in range(0, len(args), 2)}


@click.command("upload-credentials")
@click.argument("topology")
@click.argument("credentials", nargs=-1)
@click.option("-f", "--file", "cred_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A properties file of credentials (key=value per line).")
@config_options
def upload_credentials(topology: str, credentials: tuple[str, ...], cred_file: Path | None,
                       config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Replace TOPOLOGY's credentials with those of --file and the KEY VALUE pairs (which win)."""
    creds = read_properties(cred_file.read_text(encoding="utf-8")) if cred_file is not None else {}
    creds.update(pairs(credentials))
    try:
        reply = nimbus_client(load_conf(config_file, overrides)).request(
            "POST", f"/topology/{quote(topology, safe='')}/credentials", {"credentials": creds})
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(f"Uploaded new creds to topology: {reply['name']} ({len(reply['keys'])} keys)")
