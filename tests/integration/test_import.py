"""``adaptalloc import sacct|csv``, ``apps``, ``app``, ``forget`` on the real Slurm and Redis."""

from __future__ import annotations

import json
import math
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from plugin.appkey import AppKey
from plugin.config import Config
from plugin.learning.importers import import_sacct, sacct_import_id
from plugin.learning.learner import IngestStats, Learner
from plugin.slurm import CliSlurmReader
from plugin.store.connection import connect
from plugin.store.curves import CurveStore

from .testbed import PROJECT_ROOT, SlurmCLI, SubmitJob, adaptalloc, own, scratch_url

pytestmark = pytest.mark.integration

LU_CSV = PROJECT_ROOT / "tests" / "data" / "scaling" / "lan_thesis_npb_lu_W.csv"


def ok_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.fixture
def history(submit_job: SubmitJob, slurm: SlurmCLI) -> tuple[str, list[int], float, float]:
    """Three completed jobs of a fresh app in accounting: (name, ids, since, until)."""
    name = f"imp-{uuid.uuid4().hex[:10]}"
    since = time.time() - 5
    ids = [submit_job(f"--job-name={name}", f"--nodes={n}", wrap="sleep 1") for n in (1, 2, 4)]
    for job_id in ids:
        slurm.wait_sacct_job(job_id, {"COMPLETED"}, where=lambda r: r["allocation_nodes"] > 0)
    return name, ids, since, time.time() + 5


def test_import_sacct_counts_each_job_once_and_resumes(
    redis_client: Any, history: tuple[str, list[int], float, float], tmp_path: Path
) -> None:
    name, ids, since, until = history
    window = [
        "--since",
        time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since)),
        "--until",
        time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(until + 1)),
    ]
    first = ok_json(
        adaptalloc(
            "import", "sacct", *window, "--window", "0.001", "--format", "json", cwd=tmp_path
        )
    )
    assert first["windows"] >= 2  # 3.6 s windows over the ~15 s range
    assert first["added"] >= 3
    assert first["resumed_from"] is None
    app = own(name)
    store = CurveStore(redis_client)
    assert sorted(o.job_id for o in store.observations(app)) == sorted(map(str, ids))
    assert [r["app"] for r in first["refits"] if r["app"] == str(app)] == [str(app)]
    assert store.curve(app) is not None

    again = ok_json(adaptalloc("import", "sacct", *window, "--format", "json", cwd=tmp_path))
    assert again["resumed_from"] is not None
    assert (again["windows"], again["added"]) == (0, 0)  # the checkpoint covers the range

    restart = ok_json(
        adaptalloc(
            "import", "sacct", *window, "--restart", "--no-refit", "--format", "json", cwd=tmp_path
        )
    )
    assert restart["added"] == 0
    assert restart["duplicates"] >= 3
    assert len(store.observations(app)) == 3


def test_an_interrupted_import_resumes_after_its_last_window(
    redis_client: Any, history: tuple[str, list[int], float, float]
) -> None:
    name, ids, since, until = history
    store = CurveStore(connect(scratch_url()))
    learner = Learner(store, CliSlurmReader(), Config())
    windows: list[float] = []

    def interrupt_after_first(done: float, end: float, stats: IngestStats) -> None:
        windows.append(done)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_sacct(
            store,
            learner.reader,
            learner.ingestor,
            since,
            until,
            4.0,
            progress=interrupt_after_first,
        )
    checkpoint = store.checkpoint(sacct_import_id(since, until))
    start = math.floor(since)  # imports work in whole seconds, as Slurm does
    assert float(checkpoint["done_until"]) == windows[0] == start + 4
    pauses: list[float] = []
    result = import_sacct(
        store, learner.reader, learner.ingestor, since, until, 4.0, pause_s=0.5, sleep=pauses.append
    )
    assert result.resumed_from == start + 4
    assert pauses == [0.5] * (result.windows - 1)  # polite: a pause between queries
    assert sorted(o.job_id for o in store.observations(own(name))) == sorted(map(str, ids))


def test_import_csv_is_idempotent_and_the_app_commands_show_it(
    redis_client: Any, tmp_path: Path
) -> None:
    study = tmp_path / "lu.csv"
    study.write_text(LU_CSV.read_text(encoding="utf-8"), encoding="utf-8")
    first = ok_json(
        adaptalloc(
            "import",
            "csv",
            str(study),
            "--app",
            "NPB-LU",
            "--size",
            "W",
            "--format",
            "json",
            cwd=tmp_path,
        )
    )
    rows = len(LU_CSV.read_text(encoding="utf-8").strip().splitlines()) - 1
    assert (first["app"], first["added"], first["duplicates"]) == ("npb-lu@w", rows, 0)
    assert first["refits"][0]["status"] == "written"
    second = ok_json(
        adaptalloc(
            "import", "csv", str(study), "--app", "npb-lu@w", "--format", "json", cwd=tmp_path
        )
    )
    assert (second["added"], second["duplicates"], second["refits"]) == (0, rows, [])
    with study.open("a", encoding="utf-8") as f:
        f.write("64,0.05\n")
    third = ok_json(
        adaptalloc(
            "import", "csv", str(study), "--app", "npb-lu@w", "--format", "json", cwd=tmp_path
        )
    )
    assert (third["added"], third["duplicates"]) == (1, rows)

    listing = ok_json(adaptalloc("apps", "--format", "json", cwd=tmp_path))
    (entry,) = listing["apps"]
    assert (entry["app"], entry["observations"]) == ("npb-lu@w", rows + 1)
    assert entry["curve"]["version"] == 2
    assert entry["curve"]["parameters"]["model"] == "downey"
    text = adaptalloc("apps", cwd=tmp_path)
    assert text.returncode == 0
    assert "npb-lu@w" in text.stdout

    shown = ok_json(
        adaptalloc("app", "npb-lu@w", "--observations", "2", "--format", "json", cwd=tmp_path)
    )
    assert len(shown["recent_observations"]) == 2
    assert shown["recent_observations"][0]["nodes"] == 64

    refused = adaptalloc("forget", "npb-lu@w", cwd=tmp_path)  # stdin is not a terminal
    assert refused.returncode == 1
    assert refused.stderr.startswith("adaptalloc: error: forget needs --yes")
    gone = ok_json(adaptalloc("forget", "npb-lu@w", "--yes", "--format", "json", cwd=tmp_path))
    assert gone == {"app": "npb-lu@w", "forgotten": True}
    # only the tombstone stays, and it expires: the learner cannot bring the old runs back
    assert redis_client.keys("adaptalloc:v2:app:*") == ["adaptalloc:v2:app:{npb-lu@w}:forgotten"]
    assert 0 < redis_client.ttl("adaptalloc:v2:app:{npb-lu@w}:forgotten") <= 24 * 3600
    missing = adaptalloc("app", "npb-lu@w", cwd=tmp_path)
    assert missing.returncode == 1
    assert "knows no app npb-lu@w" in missing.stderr


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    bad_key = adaptalloc("app", "evil:*", cwd=tmp_path)
    assert bad_key.returncode == 2
    assert bad_key.stderr.count("\n") == 1
    down = adaptalloc("apps", cwd=tmp_path, timeout=60, redis_url="redis://127.0.0.1:1/0")
    assert down.returncode == 1
    assert down.stderr.startswith("adaptalloc: error: Redis at redis://127.0.0.1:1/0")
    assert down.stdout == ""


def test_an_admins_import_for_one_user_keeps_the_owner_on_every_size(
    redis_client: Any, tmp_path: Path
) -> None:
    """`--app alice/sp-mz` (a study split by its size column, or one size with --size) goes
    to alice's keys, never to the site's, which every user falls back on."""
    study = tmp_path / "mz.csv"
    src = PROJECT_ROOT / "tests" / "data" / "scaling" / "sizes" / "npb_mz_sp_classes_ovs.csv"
    study.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    split = ok_json(
        adaptalloc(
            "import", "csv", str(study), "--app", "alice/sp-mz", "--format", "json", cwd=tmp_path
        )
    )
    assert all(app.startswith("alice/sp-mz@") for app in split["size_apps"])
    plain = tmp_path / "lu.csv"
    plain.write_text("n,runtime\n1,100\n2,52\n4,27\n", encoding="utf-8")
    args = ("import", "csv", str(plain), "--app", "alice/lu", "--size", "big")
    one = ok_json(adaptalloc(*args, "--format", "json", cwd=tmp_path))
    assert one["added"] == 3
    store = CurveStore(connect(scratch_url()))
    assert len(store.observations(AppKey("lu", "big", "alice"))) == 3
    assert store.observations(AppKey("lu", "big")) == []
    assert store.observations(AppKey("sp-mz", "262144")) == []


def test_import_csv_of_several_sizes_stores_one_app_per_size(
    redis_client: Any, tmp_path: Path
) -> None:
    """Sibling problem sizes: a study with a size column under a bare name goes to one key per
    size; the optional columns are kept on each run; under a key with a size class, one key."""
    study = tmp_path / "mz.csv"
    src = PROJECT_ROOT / "tests" / "data" / "scaling" / "sizes" / "npb_mz_sp_classes_ovs.csv"
    study.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    doc = ok_json(
        adaptalloc("import", "csv", str(study), "--app", "sp-mz", "--format", "json", cwd=tmp_path)
    )
    apps = ["sp-mz@1074944", "sp-mz@262144", "sp-mz@32768", "sp-mz@4300800"]
    assert doc["size_apps"] == apps
    assert doc["added"] == 24
    store = CurveStore(connect(scratch_url()))
    runs = store.observations(AppKey("sp-mz", "262144"))
    assert sorted(o.nodes for o in runs) == [1, 2, 4, 6, 8, 10]
    assert {o.size for o in runs} == {262144.0}
    # A size never run borrows from these four (the store path of the daemon and decide).
    decided = ok_json(
        adaptalloc(
            "decide", "--app", "sp-mz@524288", "--nodes", "1-10", "--format", "json", cwd=tmp_path
        )
    )
    assert "borrowed from sizes 32768, 262144, 1074944, 4300800" in decided["reason"]
    shown = ok_json(adaptalloc("app", "sp-mz@32768", "--format", "json", cwd=tmp_path))
    assert shown["borrowed_curve"] is None  # it has its own curve
    assert shown["node_type_curves"] == {}

    extra = tmp_path / "extra.csv"
    extra.write_text("n,runtime,tasks,tasks_per_node,node_type\n2,5,8,4,gpu\n4,3,,,\n", "utf-8")
    one = ok_json(
        adaptalloc("import", "csv", str(extra), "--app", "x@7", "--format", "json", cwd=tmp_path)
    )
    assert "size_apps" not in one
    runs = sorted(store.observations(AppKey("x", "7")), key=lambda o: o.nodes)
    assert [(o.size, o.tasks, o.tasks_per_node, o.node_type) for o in runs] == [
        (7.0, 8, 4, "gpu"),
        (7.0, None, None, None),
    ]
