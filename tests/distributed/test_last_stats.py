"""p.last_stats() after a mesh run describes that run (its slowest rank, its collectives)
and says where the full report is; it never gives an older single-chip run, or the last
program of one rank, as the mesh's."""

import numpy as np

import pypto as p

P = p.distributed.P


def _single_chip_run():
    (p.from_numpy(np.ones(4, np.float32)) + 1).numpy()
    st = p.last_stats()
    assert st is not None and not st.get("mesh")
    return st


def test_after_a_shard_map_run_last_stats_is_the_mesh_run():
    mesh = p.distributed.make_mesh((8,), ("x",))
    a2a = p.shard_map(lambda x: p.distributed.all_to_all(x, 0, 0, axis_name="x"), mesh, in_specs=P("x"), out_specs=P("x"))
    before = _single_chip_run()
    a2a(np.ones((8 * 256, 1024), np.float32))
    st, rep = p.last_stats(), p.distributed.last_report()
    assert st["mesh"] is True and st["seconds"] == rep.seconds and st["seconds"] != before["seconds"]
    slow = max(rep.ranks, key=lambda r: r.total_s)
    assert st["slowest_rank"] == slow.rank and st["ranks"] == 8 and st["collectives"] == len(rep.collectives) == 1
    assert st["comm_seconds"] == slow.comm_s and st["cycles"] == round(rep.seconds * 1.85e9)
    assert "p.distributed.last_report()" in st["report"]
    # a later single-chip run is the latest again
    after = _single_chip_run()
    assert not after.get("mesh") and after["run"] > before["run"]


def test_ranks_computing_inside_the_mesh_run_do_not_hide_it():
    # Each rank runs programs of its own (a matmul here) during the mesh run: the
    # process's latest single-chip program is a rank's, older than the mesh run's end.
    mesh = p.distributed.make_mesh((4,), ("tp",))
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)

    def rank(x):
        return p.distributed.all_reduce(p.matmul(x, p.from_numpy(w)), axis_name="tp")

    f = p.shard_map(rank, mesh, in_specs=P(None, "tp"), out_specs=P())
    f(np.random.default_rng(1).standard_normal((32, 4 * 64)).astype(np.float32))  # a [32, 64] shard per rank
    st = p.last_stats()
    assert st["mesh"] is True and st["ranks"] == 4 and st["collectives"] == 1
    assert st["seconds"] == p.distributed.last_report().seconds and st["compute_seconds"] > 0
