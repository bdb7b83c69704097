"""Files PyPTO writes (a profile, a compilation page) when the place cannot take them: a
directory that cannot be made, a write cut short by a full disk (RLIMIT_FSIZE caps the
file size, in a child process). Each gives p.PyptoIOError naming the path, and no file
is ever left that looks complete but is not."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pypto as p


def _profiled():
    ex = p.compile(lambda x: p.relu(x * 2.0 + 1.0))
    ex.run(np.ones((64, 128), np.float32), profile=True)
    return ex


def test_a_directory_that_cannot_be_made_names_the_path(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    ex = _profiled()
    with pytest.raises(p.PyptoIOError, match=r"ProfileResult.save: cannot write .*a_file/profile") as e:
        ex.get_profile_result().save(blocker / "profile")
    assert isinstance(e.value, OSError) and e.value.get_detailed_info().suggestions
    view = p.compile(lambda x: x + 1, p.CompileConfig(enable_visualization=True, visualization_dir=str(tmp_path / "v")))
    view.run(np.ones(4, np.float32))
    with pytest.raises(p.PyptoIOError, match=r"Visualization.save: cannot write .*a_file/viz"):
        view.visualize().save(str(blocker / "viz" / "page.html"))


CHILD = textwrap.dedent("""
    import json, os, resource, sys
    import numpy as np
    import pypto as p

    out, limit, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ex = p.compile(lambda x: p.softmax(p.relu(x * 2.0 + 1.0), axis=-1),
                   p.CompileConfig(enable_visualization=True, visualization_dir=os.path.join(out, "auto")))
    ex.run(np.ones((256, 512), np.float32), profile=True)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # files past this size fail to grow
    try:
        if what == "profile":
            ex.get_profile_result().save(os.path.join(out, "prof"))
        else:
            ex.visualize().save(os.path.join(out, "page.html"))
    except p.PyptoIOError as e:
        print(json.dumps({"error": str(e)}))
    else:
        print(json.dumps({"error": None}))
""")


@pytest.mark.parametrize("what", ["profile", "visualization"])
@pytest.mark.parametrize("limit", [0, 20000, 150000])
def test_a_write_cut_short_leaves_no_file_that_looks_complete(tmp_path, what, limit):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(limit), what], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    written = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs if not d.endswith("auto")]
    assert not [w for w in written if w.endswith(".partial")], written  # no temporary file left
    if result["error"] is None:  # everything fitted under the limit: every file whole
        assert written
    else:
        assert "cannot write " + str(tmp_path) in result["error"], result["error"]
    for f in written:  # what is there is whole: the JSON parses, the pages end
        text = open(f, encoding="utf-8").read()
        if f.endswith(".json"):
            json.loads(text)
        else:
            assert text.rstrip().endswith("</html>"), f
    if limit == 0:
        assert result["error"] is not None and not written
