"""Design-space exploration: sweep Config points x workloads to cycles, utilisation,
GOPS, DRAM bytes, area and Fmax; Pareto, roofline and utilisation plots.

    from vtalab.dse.spec import load_spec
    from vtalab.dse.sweep import run_sweep
    from vtalab.dse.report import load_records, write_report

    spec = load_spec("sweep.toml")
    run_sweep(spec, "out/", jobs=2)                    # or scheduler="local" / "tcp://..."
    write_report(load_records("out/results.jsonl"), "out/")

CLI: ``vtalab dse SPEC.toml`` and ``vtalab dse report RESULTS.jsonl`` (docs/dse.md).
Importing this package is cheap: the layers load when a sweep runs.
"""
