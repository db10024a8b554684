"""The README's newcomer path: two quick-start commands, the first snippet prints, the compose client it names, and
the wheel template builds and validates."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from storm_py.nimbus.topology_check import check_package

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
#: the manual's pages: the README is its front page, each capability a page under docs/
PAGES = sorted((REPO / "docs").rglob("*.md"))
MANUAL = README + "".join(page.read_text(encoding="utf-8") for page in PAGES)


def _section(title: str) -> str:
    """A section of the README (``## title``), or the page of the manual titled so (``# title``)."""
    if f"## {title}\n" in README:
        start = README.index(f"## {title}\n")
        end = README.find("\n## ", start + 1)
        return README[start:end if end > 0 else None]
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if text.startswith(f"# {title}\n"):
            return text
    raise AssertionError(f"no README section or page titled {title!r}")


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_quick_start_is_exactly_the_demo_and_the_full_suite():
    (block,) = _blocks(_section("Quick start"), "sh")
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
    assert commands == ["./scripts/demo.sh", "./scripts/test.sh"]
    for script in commands:
        assert (REPO / script).stat().st_mode & 0o111


def test_the_wheel_template_builds_a_wheel_nimbus_accepts(tmp_path):
    """Build the README's template project with `python -m build` and validate it as nimbus does at submit."""
    section = _section("Packaging a topology as a wheel")
    (pyproject,) = _blocks(section, "toml")
    (module,) = _blocks(section, "python")
    project = tmp_path / "my-topology"
    (project / "my_topology").mkdir(parents=True)
    (project / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (project / "my_topology" / "__init__.py").write_text("", encoding="utf-8")
    (project / "my_topology" / "topology.py").write_text(module, encoding="utf-8")
    (project / "tests").mkdir()
    (project / "tests" / "test_it.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", "dist", "."],
                          cwd=project, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheel = project / "dist" / "my_topology-0.1-py3-none-any.whl"
    submit = re.search(r"^storm-py submit (\S+) (\S+)", section, flags=re.MULTILINE)
    assert submit and submit.group(1) == f"dist/{wheel.name}"
    with zipfile.ZipFile(wheel) as zf:
        top = {name.split("/")[0] for name in zf.namelist()}
    assert top == {"my_topology", "my_topology-0.1.dist-info"}  # no storm_py, no tests, no build outputs
    skeleton = check_package(wheel, submit.group(2), {"topology.workers": 1})
    assert set(skeleton.spouts) == {"words"} and set(skeleton.bolts) == {"count"}


def test_the_first_topology_snippet_runs_and_prints_its_words(tmp_path):
    """The first snippet a newcomer copies runs for a few seconds and shows what the topology does."""
    (snippet, *_) = _blocks(_section("A topology"), "python")
    script = tmp_path / "exclaim.py"
    script.write_text(snippet, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    words = proc.stdout.splitlines()
    assert len(words) >= 10 and all(w.endswith("!!!") for w in words), proc.stdout[:500]
    assert len(set(words)) > 1


def test_the_readme_names_the_compose_client_bootstrap_installs_and_it_accepts_the_file():
    """`docker-compose` 1.x is what Debian ships and bootstrap installs (Debian has no compose plugin package):
    the README tells that command, and that client validates docker-compose.yml."""
    commands = set(re.findall(r"`(docker[ -]compose) up`", MANUAL))
    assert "docker-compose" in commands
    bootstrap = (REPO / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    assert 'missing="$missing docker-compose"' in bootstrap
    client = shutil.which("docker-compose")
    assert client, "no docker-compose: ./scripts/bootstrap.sh --with-services installs it"
    proc = subprocess.run([client, "-f", str(REPO / "docker-compose.yml"), "config", "--quiet"], capture_output=True,
                          text=True, cwd=REPO, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}


def test_every_python_snippet_parses_and_its_imports_resolve():
    """A snippet may be a fragment (it uses a `builder` defined elsewhere), but what it imports exists."""
    blocks = _blocks(MANUAL, "python")
    assert len(blocks) >= 8
    for block in blocks:
        tree = ast.parse(block)
        imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
        exec(compile(ast.Module(body=imports, type_ignores=[]), "<README>", "exec"), {})


def test_the_drpc_and_trident_walk_throughs_run_as_saved(tmp_path):
    """The snippets of "Distributed RPC" and "Trident" have their imports, and run as the README says: saved in
    the repository's folder and run with `python FILE`, they print their answer."""
    for section, name, expected in (("Distributed RPC", "reach_once.py", "16"),
                                    ("Trident", "trident_once.py", "('the', 4)")):
        text = _section(section)
        (snippet,) = _blocks(text, "python")
        assert f"`python {name}`" in text.replace("\n", " ")
        script = tmp_path / name
        script.write_text(snippet, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                              check=False, cwd=REPO, env=_env())
        assert proc.returncode == 0, proc.stderr
        assert expected in proc.stdout, (section, proc.stdout)


def _example_rows() -> dict[str, str]:
    rows = re.findall(r"^\| `examples/(\w+)\.py` \| (.+?) \| .+ \|$", _section("Examples"), flags=re.MULTILINE)
    return dict(rows)


def test_every_example_has_its_command_in_the_readme():
    rows = _example_rows()
    modules = {p.stem for p in (REPO / "examples").glob("*.py")} - {"__init__", "sqlite_state", "streams_spouts"}
    assert set(rows) == modules, set(rows) ^ modules
    for name, command in rows.items():
        source = (REPO / "examples" / f"{name}.py").read_text(encoding="utf-8")
        if command.startswith("`storm-py local "):
            assert command.startswith(f"`storm-py local examples.{name}:build --ttl ") and "\ndef build(" in source
        elif command.startswith("`python -m "):
            assert command.startswith(f"`python -m examples.{name}`") and "\ndef main(" in source
        else:
            assert re.match(r"see \"[\w ]+\"|`storm-py spark-job examples\." + name, command), command


def test_each_in_process_example_prints_its_result():
    """Every `storm-py local` command of the table, with a short --ttl: besides the progress lines, the example
    prints what it computed."""
    for name, command in _example_rows().items():
        if not command.startswith("`storm-py local "):
            continue
        args = command.strip("`").split()[2:]
        args[args.index("--ttl") + 1] = "3"
        proc = subprocess.run([sys.executable, "-m", "storm_py", "local", *args], capture_output=True, text=True,
                              timeout=120, check=False, cwd=REPO, env=_env())
        assert proc.returncode == 0, (name, proc.stderr)
        result = [x for x in proc.stdout.splitlines()
                  if not x.startswith(("running ", "[", "done: ", "last error of "))]
        assert result, f"{name} printed no result:\n{proc.stdout}"


def test_the_readme_warns_of_topology_debug_wherever_it_offers_it():
    """`topology.debug=true` logs every tuple: wherever the README or the docs mention it, the same paragraph says
    how much log it makes."""
    for doc in [REPO / "README.md", *PAGES]:
        for paragraph in re.split(r"\n\s*\n|\n(?=- )", doc.read_text(encoding="utf-8")):
            if "topology.debug=true" in paragraph:
                assert re.search(r"\d+ MB", paragraph), f"{doc.name}: {paragraph[:200]}"


def test_the_readme_is_a_front_page_linking_each_capability_to_its_page():
    """The README stays a front page: short, each capability a link to the manual's page about it."""
    assert len(README.splitlines()) < 150
    links = re.findall(r"\]\((docs/[\w/.-]+\.md)\)", _section("What it does"))
    assert len(links) >= 12 and all((REPO / link).is_file() for link in links), links
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(link.removeprefix("docs/") in nav for link in links), "a page the README links is not in the site"
