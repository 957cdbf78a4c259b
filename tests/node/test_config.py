"""Config loading: defaults, files, environment overrides, and the errors a user sees."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from crypto.identity import Identity
from node.config import Config
from node.config_loading import load_config
from node.errors import ConfigError
from node.paths import choose_config_path, choose_data_dir
from p2p.network.settings import DiscoverySettings

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "node.toml"
    path.write_text(text)
    return path


def test_embedded_defaults_equal_the_documented_edge_config() -> None:
    documented = load_config(REPO / "configs" / "edge.toml", {}).config
    assert documented == Config()
    assert load_config(None, {}).config == Config()


def test_management_example_is_valid_and_a_management_role() -> None:
    cfg = load_config(REPO / "configs" / "management.toml", {}).config
    assert cfg.node.role == "management"
    # Every key the example sets exists in the documented edge file too.
    example = tomllib.loads((REPO / "configs" / "management.toml").read_text())
    edge = tomllib.loads((REPO / "configs" / "edge.toml").read_text())
    for section, keys in example.items():
        assert set(keys) <= set(edge[section])


def test_file_values_and_environment_overrides(tmp_path: Path) -> None:
    key = Identity.generate().public_key.hex()
    path = write(tmp_path, f'[node]\nname = "kitchen"\n[trust]\nmanagement_keys = ["{key}"]\n')
    loaded = load_config(
        path,
        {
            "BITTERBOT_LOG__LEVEL": "debug",
            "BITTERBOT_WIRE__MAX_AGE_S": "120",
            "BITTERBOT_CONFIG": "ignored-here",
            "OTHER": "x",
        },
    )
    assert loaded.config.node.name == "kitchen"
    assert loaded.config.trust.management_keys == [key]
    assert loaded.config.log.level == "debug"
    assert loaded.config.wire.max_age_s == 120
    assert loaded.env_overrides == {"log.level": "BITTERBOT_LOG__LEVEL", "wire.max_age_s": "BITTERBOT_WIRE__MAX_AGE_S"}


def test_text_settings_from_the_environment_stay_text() -> None:
    token = "0x5FbDB2315678afecb367f032d93F642f64180aa3"  # also a valid TOML hexadecimal integer
    escrow = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
    loaded = load_config(
        None,
        {
            "BITTERBOT_CHAIN__URL": "http://127.0.0.1:8545",
            "BITTERBOT_CHAIN__TOKEN_ADDRESS": token,
            "BITTERBOT_CHAIN__ESCROW_ADDRESS": escrow,
            "BITTERBOT_CHAIN__DEV": "true",
            "BITTERBOT_NODE__NAME": "1234",
        },
    )
    chain = loaded.config.chain
    assert (chain.token_address, chain.escrow_address, chain.dev) == (token, escrow, True)
    assert loaded.config.node.name == "1234"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[node]\nnmae = "x"\n', "key 'node.nmae': unknown key; valid keys here are: data_dir, name, role"),
        (
            "[nodes]\n",
            "key 'nodes': unknown key; valid keys here are: api, capture, chain, consolidation, devices, doctor, "
            "dream, hormones, identity, llm, log, marketplace, memory, node, p2p, trust, wire",
        ),
        ('[chain]\nurl = "127.0.0.1:8545"\n', "key 'chain.url': '127.0.0.1:8545' is not an http(s)"),
        (
            '[chain]\nurl = "http://127.0.0.1:8545"\n',
            "key 'chain': with a chain url, token_address must be the 0x-prefixed contract address",
        ),
        ("[chain]\ndev = true\n", "key 'chain': token_address, escrow_address and dev belong to a chain"),
        ('[wire]\nmax_age_s = "300"\n', "key 'wire.max_age_s': Input should be a valid integer (got '300')"),
        ('[log]\nlevel = "loud"\n', "key 'log.level': Input should be 'debug', 'info', 'warning' or 'error'"),
        ("[wire]\nmax_envelope_bytes = 10\n", "key 'wire.max_envelope_bytes': Input should be greater than or equal"),
        ('[trust]\nmanagement_keys = ["abcd"]\n', "key 'trust.management_keys': an Ed25519 public key is 64 hex"),
        ("[node]\nname = \n", "is not valid TOML"),
        ("node = 3\n", "key 'node': Input should be a valid dictionary"),
        ("[consolidation]\nforget_threshold = 0.8\n", "key 'consolidation': forget_threshold must be below promote"),
        ("[p2p]\nweather_renew_s = 0.5\n", "key 'p2p': weather_renew_s is 0 (never) or at least 2.0 s"),
        ('[dream]\nsynthesizer = "chat"\n', "key 'dream': synthesizer = \"chat\" needs chat_url and chat_model"),
        ('[memory]\nsupersession = "llm"\n', 'supersession = "llm" needs [llm] url and model'),
        ('[memory]\nsupersession = "maybe"\n', "key 'memory.supersession': Input should be 'offline', 'llm' or 'off'"),
        (
            "[consolidation]\ndecay_rate_per_ms = -1.0\n",
            "key 'consolidation.decay_rate_per_ms': Input should be greater",
        ),
    ],
)
def test_bad_files_name_the_file_key_and_expectation(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_missing_file_and_non_utf8_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: file not found"):
        load_config(tmp_path / "nope.toml", {})
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(bad, {})


def test_bad_environment_values_name_the_variable() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {"BITTERBOT_WIRE__MAX_AGE_S": "soon"})
    assert "environment variable BITTERBOT_WIRE__MAX_AGE_S" in str(info.value)
    assert "wire.max_age_s" in str(info.value)


def test_a_table_from_the_environment_is_a_toml_inline_table_and_json_is_told_so() -> None:
    loaded = load_config(None, {"BITTERBOT_LOG__PARTS": '{ "libp2p.relay" = "debug" }'})
    assert loaded.config.log.parts == {"libp2p.relay": "debug"}
    with pytest.raises(ConfigError, match=r"BITTERBOT_LOG__PARTS.*TOML inline table: \{ \"name\" = \"value\" \}"):
        load_config(None, {"BITTERBOT_LOG__PARTS": '{"libp2p.relay": "debug"}'})


@pytest.mark.parametrize("var", ["BITTERBOT_LOG_LEVEL", "BITTERBOT_NOPE__X"])
def test_unknown_bitterbot_variables_are_errors(var: str) -> None:
    with pytest.raises(ConfigError, match=f"environment variable {var}: unknown variable"):
        load_config(None, {var: "debug"})


def test_unknown_key_via_environment_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="BITTERBOT_LOG__COLOUR"):
        load_config(None, {"BITTERBOT_LOG__COLOUR": "red"})


def test_config_and_data_dir_precedence(tmp_path: Path) -> None:
    cli_dir, env_dir = tmp_path / "cli", tmp_path / "env"
    env_dir.mkdir()
    (env_dir / "config.toml").write_text("")
    assert choose_config_path(tmp_path / "x.toml", None, {}) == tmp_path / "x.toml"
    assert choose_config_path(None, None, {"BITTERBOT_CONFIG": "/c.toml"}) == Path("/c.toml")
    assert choose_config_path(None, None, {"BITTERBOT_DATA_DIR": str(env_dir)}) == env_dir / "config.toml"
    assert choose_config_path(None, cli_dir, {"BITTERBOT_DATA_DIR": str(env_dir)}) is None
    cfg = load_config(None, {"BITTERBOT_NODE__DATA_DIR": str(tmp_path / "cfg")}).config
    assert choose_data_dir(cli_dir, cfg, {"BITTERBOT_DATA_DIR": str(env_dir)}) == cli_dir
    assert choose_data_dir(None, cfg, {"BITTERBOT_DATA_DIR": str(env_dir)}) == env_dir
    assert choose_data_dir(None, cfg, {}) == tmp_path / "cfg"
    assert choose_data_dir(None, Config(), {}).name == "bitterbot-node"


def test_peers_heard_per_source_is_one_setting_of_the_p2p_section() -> None:
    """``[p2p] peer_store_per_source``: how many unproven peers one neighbour may have told of (issue 48)."""
    assert load_config(None, {}).config.p2p.peer_store_per_source == DiscoverySettings().peer_store_per_source
    loaded = load_config(None, {"BITTERBOT_P2P__PEER_STORE_PER_SOURCE": "5"})
    assert loaded.config.p2p.peer_store_per_source == 5


def test_a_deeply_nested_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """`python -m bench fuzz` (config-toml): 'a = [[[[...' took 329 s to refuse once the embedded
    chain's libraries had raised the recursion limit (tomllib recursed to the limit, then raised
    RecursionError). Now the nesting is measured first, whatever the recursion limit is."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)  # as py-evm sets it
    try:
        for opening, closing in (("[", "]"), ("{b = ", "}")):
            path = tmp_path / "deep.toml"
            path.write_text("a = " + opening * 3_000 + "1" + closing * 3_000 + "\n")
            with pytest.raises(ConfigError, match="more than 64 levels deep"):
                load_config(path, {})
        path.write_text('a = "' + "[" * 3_000 + '"\n# ' + "{" * 3_000 + "\n")  # brackets in text only
        with pytest.raises(ConfigError, match="unknown"):  # parsed, and refused for its key instead
            load_config(path, {})
    finally:
        sys.setrecursionlimit(limit)
