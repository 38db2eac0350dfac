"""docs/embedding.md's example runs as written and prints what the page says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "embedding.md"


def test_the_embedding_example_runs_as_written(tmp_path: Path) -> None:
    text = DOC.read_text()
    # the first block is the whole example; the later ones are fragments ("Under a path" is
    # tests/support/mounted.py, served in tests/http/test_mounted_e2e.py)
    block = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    script = tmp_path / "example.py"
    script.write_text(block)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["check: True", "again: already_owned 409"]
    assert "It prints `check: True`, then `again: already_owned 409`." in text
