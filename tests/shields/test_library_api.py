"""The public library surface, ``from shields import ...``: the exact names, where each comes
from, that ``import shields`` alone stays cheap, and that docs/library.md's examples run."""

from __future__ import annotations

import doctest
import importlib
import re
import subprocess
import sys

import pytest

import shields
from tests.support.constants import REPO_ROOT

ROOT = REPO_ROOT
LIBRARY_DOC = ROOT / "docs" / "library.md"
TICKETS_PLUGIN = ROOT / "tests" / "support" / "plugins" / "tickets" / "shieldgate_tickets.py"

# Each public name and the module that defines it. Adding a name is a decision: add it here.
PUBLIC = {
    "Action": "shields.base",
    "Chunk": "shields.base",
    "Finding": "shields.base",
    "Role": "shields.base",
    "Scanner": "shields.base",
    "Shield": "shields.base",
    "Stage": "shields.base",
    "Verdict": "shields.base",
    "Evaluation": "shields.evaluate",
    "TextResult": "shields.evaluate",
    "evaluate": "shields.evaluate",
    "StreamNormalizer": "shields.normalize",
    "CompiledPolicy": "shields.policy",
    "PolicyError": "shields.policy",
    "Problem": "shields.policy",
    "load_policy": "shields.policy",
    "parse_policy": "shields.policy",
    "PLUGIN_GROUP": "shields.registry",
    "ShieldType": "shields.registry",
    "ShieldSpecBase": "shields.spec",
}


def test_all_is_exactly_the_public_names() -> None:
    assert sorted(shields.__all__) == sorted(PUBLIC)
    assert len(shields.__all__) == len(set(shields.__all__))


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_each_name_is_its_defining_modules_object(name: str) -> None:
    assert getattr(shields, name) is getattr(importlib.import_module(PUBLIC[name]), name)
    assert name in dir(shields)


def test_a_public_name_wins_over_the_submodule_of_that_name() -> None:
    """``shields.evaluate`` is the function even after the module ``shields.evaluate`` (which
    defines it) is imported, whichever comes first."""
    code = (
        "import importlib, sys\n"
        "first = sys.argv[1] == 'module'\n"
        "if first: import shields.evaluate\n"
        "from shields import evaluate\n"
        "import shields.evaluate\n"
        "module = importlib.import_module('shields.evaluate')\n"
        "import shields\n"
        "print(evaluate is shields.evaluate is module.evaluate, callable(evaluate))\n"
    )
    for order in ("module", "name"):
        done = subprocess.run(
            [sys.executable, "-c", code, order], capture_output=True, text=True, timeout=60
        )
        assert done.stdout == "True True\n", done.stderr


def test_star_import_gives_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from shields import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(PUBLIC)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'shields' has no attribute 'evaluate_all'"):
        shields.evaluate_all  # noqa: B018
    with pytest.raises(ImportError):
        exec("from shields import _HOMES_", {})


def test_the_plugin_group_is_the_entry_point_group() -> None:
    assert shields.PLUGIN_GROUP == "shieldgate.shields"


def test_importing_shields_loads_none_of_the_library() -> None:
    """The proxy imports ``shields.*`` modules on its own: the package must not load policies,
    the built-in shields, pydantic or the plugins for it. A name loads its module on use."""
    code = (
        "import sys, shields\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'shields', 'pydantic', 'yaml', 're2', 'proxy'}))\n"
        "shields.Verdict\n"
        "print('shields.base' in sys.modules, 'shields.policy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines() == ["['shields']", "True False"]


def _fenced(language: str) -> list[tuple[int, str]]:
    """The doc's code blocks in ``language``, with the line each starts on."""
    text = LIBRARY_DOC.read_text(encoding="utf-8")
    blocks = []
    for match in re.finditer(rf"^```{language}\n(.*?)^```$", text, re.M | re.S):
        blocks.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return blocks


def test_the_library_docs_examples_run() -> None:
    """The ``pycon`` blocks of docs/library.md, run in order in one namespace, as doctests."""
    blocks = _fenced("pycon")
    assert len(blocks) >= 2
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    namespace: dict[str, object] = {}
    for line, block in blocks:
        test = parser.get_doctest(block, namespace, f"library.md:{line}", str(LIBRARY_DOC), line)
        assert test.examples
        runner.run(test, out=lambda report: pytest.fail(report), clear_globs=False)
        namespace = test.globs
    assert runner.summarize(verbose=False).failed == 0


def test_the_docs_plugin_example_is_the_tested_plugin() -> None:
    """docs/library.md shows tests/support/plugins/tickets, which tests/shields/test_plugins.py
    installs and
    uses through the CLI and the proxy: the example on the page is known to work."""
    plugin = TICKETS_PLUGIN.read_text(encoding="utf-8")
    assert plugin in [block for _, block in _fenced("python")]
