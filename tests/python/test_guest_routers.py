"""Custom routers and hostile guests through the real binary (issue 3, items 2 and 6;
docs/POLICIES.md): the example routers in Rust, Python and JavaScript (examples/, built by
scripts/build-examples) configured or uploaded through `POST /v1/admin/policies`, routing real
requests to the model each chose; and guests that loop, grow memory, trap or snoop, behind a
gateway that keeps serving meanwhile. (A wrong-world upload: test_hot_swap.py.)"""

from __future__ import annotations

import base64
import threading
import time

import httpx
import openai
import pytest

import harness

EXAMPLES = harness.REPO / "target" / "examples"
HOSTILE_WASM = harness.REPO / "policies" / "target" / "wasm32-wasip2" / "release" / "hostile.wasm"

ARABIC = "ما هي عاصمة فرنسا؟"
FRENCH = "Bonjour, pouvez-vous m'expliquer comment fonctionne la photosynthèse des plantes vertes ?"
ENGLISH = "What is the capital of France?"
LONG_ENGLISH = " ".join(["The quarterly report covers revenue, costs and hiring plans."] * 80)


def example(name: str) -> bytes:
    path = EXAMPLES / f"{name}_router.wasm"
    assert path.exists(), f"{path} is missing: run scripts/build-examples (scripts/test does)"
    return path.read_bytes()


@pytest.fixture(scope="module")
def policy_cache(tmp_path_factory):
    """One compiled-artifact cache for every gateway here: each component compiles once."""
    return tmp_path_factory.mktemp("policy-cache")


def start(sim, keys, directory, policy_cache, **routing):
    # `deadline_ms`: the Python router's fresh instance costs ~3 ms in a debug build; a CI machine
    # busy with other tests could push a good call past the 5 ms default (tests/it covers deadlines).
    routing = {"cache_dir": str(policy_cache), "deadline_ms": 100, **routing}
    config = harness.gateway_config(harness.fleet_models(sim.url), keys["config"], routing=routing)
    return harness.start_gateway(config, directory)


@pytest.fixture(scope="module")
def gw(sim, keys, tmp_path_factory, policy_cache):
    """Starts on the Rust example, named in the config; the other examples are uploaded."""
    directory = tmp_path_factory.mktemp("guests")
    (directory / "router.wasm").write_bytes(example("rust"))
    p = start(sim, keys, directory, policy_cache, component="router.wasm")
    yield p
    p.kill()


@pytest.fixture
def admin(gw, keys):
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=120) as c:
        yield c


@pytest.fixture
def client(gw, keys):
    return openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)


def ask(client, text, model="auto-router"):
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": text}])
    return raw.parse().model, raw.headers["x-route-policy"]


def upload(admin, component=None, document=None, pool=None):
    body = {}
    if component is not None:
        body["component_base64"] = base64.b64encode(component).decode()
    if document is not None:
        body["document"] = document
    if pool is not None:
        body["pool"] = pool
    return admin.post("/v1/admin/policies", json=body)


def test_rust_example_named_in_the_config_keeps_requests_on_local_speakers(admin, client):
    rust = admin.post("/v1/admin/policies/pol_1/activate")
    assert rust.status_code == 200, rust.text
    assert rust.json()["name"] == "rust-residency" and rust.json()["pool"] == "fresh"
    # Arabic: the cheapest local Arabic model (allam), not the rules router's jais.
    assert ask(client, ARABIC) == ("allam-7b-instruct", "rust-residency")
    # French: no local model speaks it, so the remote one that does.
    assert ask(client, FRENCH) == ("magistral-small", "rust-residency")
    assert ask(client, ENGLISH) == ("llama-3.2-3b-instruct", "rust-residency")


@pytest.mark.parametrize("pool", ["warm", "fresh"])
def test_python_example_uploaded_routes_by_prompt_size(admin, client, pool):
    r = upload(admin, example("python"), pool=pool)
    assert r.status_code == 201, r.text
    v = r.json()
    assert (v["name"], v["pool"], v["active"]) == ("py-size", pool, True)
    assert v["world"] == "sovereign:policy/router-policy@0.1.0"
    for _ in range(3):  # warm: the same instances serve again
        assert ask(client, ENGLISH) == ("llama-3.2-3b-instruct", "py-size")
        # Long: the dearest English speaker, taken as the strongest.
        assert ask(client, LONG_ENGLISH) == ("jais-30b-chat", "py-size")
    assert ask(client, ARABIC) == ("allam-7b-instruct", "py-size")


def test_js_example_uploaded_with_its_document_pins_a_team(admin, client):
    # The harness's keys belong to team `t1`.
    r = upload(admin, example("js"), document='{"teams": {"t1": "qwen2.5-coder-32b"}}', pool="warm")
    assert r.status_code == 201, r.text
    assert (r.json()["name"], r.json()["pool"]) == ("js-teams", "warm")
    assert r.json()["kind"] == "component+document"
    for text in (ENGLISH, ARABIC, LONG_ENGLISH):
        assert ask(client, text) == ("qwen2.5-coder-32b", "js-teams")
    # A new document alone keeps the JavaScript component (and its pool): no pin, so the
    # fastest (here: cheapest, none measured) healthy speaker.
    r = upload(admin, document='{"teams": {}}')
    assert r.status_code == 201, r.text
    assert r.json()["pool"] == "warm"
    assert ask(client, ENGLISH) == ("llama-3.2-3b-instruct", "js-teams")
    assert ask(client, ARABIC) == ("allam-7b-instruct", "js-teams")
    # A document the router cannot read fails its smoke call: 400, and the active version stays.
    r = upload(admin, document="not json")
    assert r.status_code == 400, r.text
    assert "not JSON" in r.json()["error"]["message"]
    assert ask(client, ENGLISH) == ("llama-3.2-3b-instruct", "js-teams")


# --- hostile guests --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_gw(sim, keys, tmp_path_factory, policy_cache):
    """Deadline 50 ms, memory cap 16 MiB; starts on the rules router."""
    directory = tmp_path_factory.mktemp("hostile")
    (directory / "routing.yaml").write_text(
        "name: calm\nroutes:\n  - name: english\n    condition: \"language == 'en'\"\n"
        "    model: llama-3.2-3b-instruct\ndefault: qwen2.5-coder-32b\n")
    p = start(sim, keys, directory, policy_cache, document="routing.yaml", deadline_ms=50, memory_mb=16)
    yield p
    p.kill()


def turn_hostile(gw, keys, mode, pool="fresh"):
    """Uploads the hostile guest, which passes its smoke call and then does `mode` on every
    request (tests/it/policy.rs drives the same guest per call)."""
    assert HOSTILE_WASM.exists(), "build the host first (policy-artifacts builds the test guests)"
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {keys['admin']}"}, timeout=60) as a:
        r = upload(a, HOSTILE_WASM.read_bytes(), document=f"mode: {mode}\n", pool=pool)
    assert r.status_code == 201, r.text
    return r.json()


class Bystander:
    """Sends explicit-model requests on another thread while a hostile guest is active."""

    def __init__(self, gw, keys):
        self.client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)
        self.ok = 0
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.is_set():
            try:
                assert ask(self.client, ENGLISH, model="magistral-small") == ("magistral-small", "explicit-model")
                self.ok += 1
            except Exception as e:  # noqa: BLE001 - any failure counts
                self.failures.append(repr(e))

    def __enter__(self):
        self.thread.start()
        harness.wait_for(lambda: self.ok >= 2, timeout=20, what="bystander requests")
        return self

    def __exit__(self, *exc):
        start = self.ok
        harness.wait_for(lambda: self.ok >= start + 2 or self.failures, timeout=20, what="more bystander requests")
        self.stop.set()
        self.thread.join(timeout=30)
        assert self.failures == []


@pytest.mark.parametrize("mode,pool,logged", [
    ("loop", "fresh", "ran past its 50ms deadline"),
    ("loop", "warm", "ran past its 50ms deadline"),
    ("grow", "fresh", "exceeded its memory cap of 16777216 bytes"),
    ("panic", "warm", "trapped"),
])
def test_a_hostile_router_falls_back_to_the_default_model_and_the_gateway_serves_on(
        hostile_gw, keys, mode, pool, logged):
    turn_hostile(hostile_gw, keys, mode, pool)
    c = openai.OpenAI(base_url=f"{hostile_gw.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)
    with Bystander(hostile_gw, keys):
        for _ in range(3):
            started = time.monotonic()
            # docs/POLICIES.md, fail modes: a router that fails gives the default route, never an error.
            assert ask(c, ENGLISH) == ("jais-30b-chat", "default")
            # Stopped at its deadline (50 ms of running), not left to run: well under a second.
            assert time.monotonic() - started < 2.0
    harness.wait_for(lambda: any(logged in line for line in hostile_gw.stderr_lines), timeout=10,
                     what=f"the gateway's log to say `{logged}`")


def test_a_snooping_router_finds_no_files_environment_or_arguments(hostile_gw, keys):
    turn_hostile(hostile_gw, keys, "snoop")
    c = openai.OpenAI(base_url=f"{hostile_gw.url}/v1", api_key=keys["member"], max_retries=0, timeout=20)
    raw = c.chat.completions.with_raw_response.create(
        model="auto-router", messages=[{"role": "user", "content": ENGLISH}])
    # The guest reports what it found as its policy name.
    assert raw.headers["x-route-policy"].startswith("env=0;args=0;file=denied;dir=denied;"), raw.headers
    assert raw.parse().model == "jais-30b-chat"  # the first candidate
