"""Request examples in the OpenAPI document: valid bodies, so /docs' "Try it out" and a schema
fuzzer's example phase go down the success path (a generated spec almost never is valid: its
cross-field rules, such as node_speed having one entry per node, are not in the schema).

``tests/service/test_openapi.py`` checks that every example validates and is accepted.
"""

from __future__ import annotations

from typing import Any

TINY_SPEC: dict[str, Any] = {
    "workload": {"name": "digits-mlp"},
    "target": {"metric": "train_loss", "value": 0.5, "eval_every": 5},
    "cluster": {"backend": "simulated", "nodes": 1, "devices_per_node": 2},
    "search": {"strategies": ["sync", "async_groups"], "batch_sizes": [32], "learning_rates": [0.1, 0.3],
               "momenta": [0.9]},
    "budget": {"probe_seconds": 0.5, "max_probes": 3, "probe_max_iterations": 50},
    "seed": 0,
}

HETEROGENEOUS_SPEC: dict[str, Any] = {
    "workload": {"name": "digits-cnn"},
    "target": {"metric": "train_loss", "value": 0.3},
    "cluster": {"backend": "simulated", "nodes": 2, "devices_per_node": 2, "device": {"name": "a100"},
                "network": {"intra_gbps": 600, "inter_gbps": 25, "latency_us": 5},
                "node_speed": [1.0, 0.5],
                "disturbance": {"probability": 0.05, "slowdown": 2.0, "duration_steps": 20}},
    "search": {"strategies": ["sync", "daso", "dbs"], "batch_sizes": [16, 32]},
    "budget": {"probe_seconds": 2, "max_probes": 6, "probe_max_iterations": 100},
    "seed": 7,
}

SPEC_EXAMPLES: dict[str, dict[str, Any]] = {
    "tiny": {"summary": "three short probes on a 1×2 simulated cluster", "value": TINY_SPEC},
    "heterogeneous": {"summary": "two nodes of unequal speed, random slowdowns", "value": HETEROGENEOUS_SPEC},
    "smallest": {"summary": "only the workload: every other field has a default",
                 "value": {"workload": {"name": "digits-mlp"}}},
}

PREDICT_EXAMPLES: dict[str, dict[str, Any]] = {
    "one config": {
        "summary": "one short probe of synchronous SGD, then its predicted TTC",
        "value": {"spec": TINY_SPEC, "configs": [
            {"strategy": "sync", "nodes": 1, "devices_per_node": 2, "batch_size": 32, "lr": 0.1,
             "momentum": 0.9},
        ]},
    },
}
