"""The spec contract: defaults cover the whole space; bad input names the field and the value."""

from __future__ import annotations

import json

import pytest

from predictor.types import STRATEGIES
from worker.spec import SpecError, load_spec, parse_spec


def test_minimal_spec_gets_defaults_covering_the_space() -> None:
    spec = parse_spec({"workload": {"name": "digits-mlp"}})
    assert set(spec.search.strategies) == set(STRATEGIES)
    assert spec.cluster.backend == "simulated"
    space = spec.search_space()
    assert space.batch_sizes and space.learning_rates and space.momenta


@pytest.mark.parametrize(
    ("data", "field", "value"),
    [
        ({"workload": {"name": "nope"}}, "workload", "nope"),
        ({"workload": {"name": "digits-mlp"}, "cluster": {"nodes": 0}}, "cluster.nodes", "0"),
        ({"workload": {"name": "digits-mlp"}, "cluster": {"device": {"name": "tpu"}}}, "cluster.device.name",
         "tpu"),
        ({"workload": {"name": "digits-mlp"}, "search": {"strategies": ["magic"]}}, "search.strategies",
         "magic"),
        ({"workload": {"name": "digits-mlp"}, "budget": {"max_probes": -3}}, "budget.max_probes", "-3"),
        ({"workload": {"name": "digits-mlp"}, "target": {"value": -1}}, "target.value", "-1"),
        ({"workload": {"name": "digits-mlp"}, "colour": "red"}, "colour", "red"),
    ],
)
def test_bad_field_is_named_with_its_value(data: dict, field: str, value: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    message = str(info.value)
    assert field in message and value in message


def test_a_misspelt_field_names_the_one_meant() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"workload": {"name": "digits-mlp"}, "search": {"learning_rate": [0.1]},
                    "budget": {"max_probe": 3}, "colour": "red"})
    lines = str(info.value).splitlines()
    assert any("search.learning_rate" in line and "did you mean 'learning_rates'?" in line for line in lines)
    assert any("budget.max_probe" in line and "did you mean 'max_probes'?" in line for line in lines)
    assert any(line.startswith("colour") and "did you mean" not in line for line in lines)  # nothing close


def test_node_speed_must_match_nodes() -> None:
    with pytest.raises(SpecError, match="node_speed has 1 entries but nodes=2"):
        parse_spec({"workload": {"name": "digits-mlp"}, "cluster": {"nodes": 2, "node_speed": [1.0]}})


def test_user_factory_needs_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    data = {"workload": {"factory": "worker.workloads.digits:digits_mlp"}}
    monkeypatch.delenv("TTC_WORKLOAD_MODULES", raising=False)
    with pytest.raises(SpecError, match="TTC_WORKLOAD_MODULES"):
        parse_spec(data)
    monkeypatch.setenv("TTC_WORKLOAD_MODULES", "worker.workloads.digits")
    assert parse_spec(data).workload.factory == "worker.workloads.digits:digits_mlp"


def test_yaml_and_json_files_load_the_same(tmp_path) -> None:
    data = {"workload": {"name": "digits-cnn"}, "cluster": {"nodes": 2, "devices_per_node": 4}}
    (tmp_path / "a.json").write_text(json.dumps(data))
    (tmp_path / "a.yaml").write_text(
        "workload: {name: digits-cnn}\ncluster: {nodes: 2, devices_per_node: 4}\n"
    )
    assert load_spec(tmp_path / "a.json") == load_spec(tmp_path / "a.yaml")


def test_unreadable_or_non_mapping_files_are_clear(tmp_path) -> None:
    with pytest.raises(SpecError, match="cannot read spec"):
        load_spec(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(SpecError, match="a spec is a mapping"):
        load_spec(tmp_path / "list.yaml")
