# SPDX-License-Identifier: Apache-2.0
"""Security of the shipped collector configs (docs/reliability.md): every listener binds to
127.0.0.1 by default (read from the configs, and checked on the sockets of running processes), and
the tier-1 -> tier-2 hop runs mutual TLS with the overlays in collector-config/tls/ (a CA, server and
client certificates generated here): with them the traces are judged; a tier 1 without a client
certificate, or with one from another CA, gets nothing through."""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from pathlib import Path

import collector_support as cs
import pytest
import reliability_support as rs
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

pytestmark = [pytest.mark.collector]

CONFIGS = sorted(cs.CONFIGS.glob("*.yaml"))
_ENV = re.compile(r"\$\{env:(\w+)(?::-([^}]*))?\}")


def _default(value: str) -> str:
    """``${env:X:-default}`` -> default; a reference without a default is an error."""

    def sub(m: re.Match) -> str:
        assert m.group(2) is not None, f"{m.group(0)} has no default"
        return m.group(2)

    return _ENV.sub(sub, str(value))


def _listeners(config: dict) -> dict[str, str]:
    """Every address the config listens on, by where it is configured."""
    out = {}
    for name, rec in (config.get("receivers") or {}).items():
        for proto, settings in ((rec or {}).get("protocols") or {}).items():
            out[f"receivers.{name}.{proto}"] = (settings or {}).get("endpoint", "<implicit>")
    for name, ext in (config.get("extensions") or {}).items():
        if name.startswith("health_check"):
            out[f"extensions.{name}"] = (ext or {}).get("endpoint", "<implicit>")
    for i, reader in enumerate(config["service"]["telemetry"]["metrics"].get("readers", [])):
        prom = reader["pull"]["exporter"]["prometheus"]
        out[f"telemetry.readers[{i}]"] = f"{prom['host']}:{prom['port']}"
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_listener_defaults_to_loopback(config):
    listeners = _listeners(yaml.safe_load(config.read_text()))
    assert listeners
    for where, address in listeners.items():
        assert _default(address).rsplit(":", 1)[0] == "127.0.0.1", (where, address)


def _listening(pid: int) -> list[str]:
    """Addresses of the TCP sockets ``pid`` listens on (its fds matched to /proc/net/tcp{,6})."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = []
    for table, _width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # LISTEN
                host, port = parts[1].split(":")
                raw = bytes.fromhex(host)
                # /proc prints each 32-bit word little-endian
                raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                out.append(f"{ipaddress.ip_address(raw)}:{int(port, 16)}")
    return out


def test_running_collectors_listen_only_on_loopback(tmp_path):
    dep = rs.Deployment(tmp_path)
    try:
        for tier in (dep.backend, dep.tier2, dep.tier1):
            addresses = _listening(tier.current.proc.pid)
            assert addresses, tier.current.log
            assert all(a.startswith("127.0.0.1:") for a in addresses), addresses
    finally:
        dep.stop()


def _cert(subject: str, issuer_key, issuer_name, key, *, ca: bool = False, server: bool = False):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer_name or x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _write(directory: Path, name: str, cert, key) -> tuple[str, str]:
    crt, pem = directory / f"{name}.crt", directory / f"{name}.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(crt), str(pem)


def _pki(directory: Path) -> dict[str, str]:
    """A CA with a server (127.0.0.1) and a client certificate, and a client of another CA."""
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for ca_name in ("ca", "rogue-ca"):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = _cert(ca_name, ca_key, None, ca_key, ca=True)
        out[ca_name], _ = _write(directory, ca_name, ca, ca_key)
        kinds = (("server", True), ("client", False)) if ca_name == "ca" else (("rogue-client", False),)
        for name, server in kinds:
            key = ec.generate_private_key(ec.SECP256R1())
            out[f"{name}.crt"], out[f"{name}.key"] = _write(
                directory, name, _cert(name, ca_key, ca.subject, key, server=server), key
            )
    return out


def test_mutual_tls_between_tier1_and_tier2(tmp_path):
    pki = _pki(tmp_path / "pki")
    tier2_tls = {
        "TIER2_TLS_CERT_FILE": pki["server.crt"],
        "TIER2_TLS_KEY_FILE": pki["server.key"],
        "TIER2_TLS_CLIENT_CA_FILE": pki["ca"],
    }
    good = {
        "TIER2_TLS_CA_FILE": pki["ca"],
        "TIER1_TLS_CERT_FILE": pki["client.crt"],
        "TIER1_TLS_KEY_FILE": pki["client.key"],
    }
    rogue = dict(good, TIER1_TLS_CERT_FILE=pki["rogue-client.crt"], TIER1_TLS_KEY_FILE=pki["rogue-client.key"])
    dep = rs.Deployment(
        tmp_path / "good",
        tier1_env=good,
        tier2_env=tier2_tls,
        tier1_configs=("tls/tier1.yaml",),
        tier2_configs=("tls/tier2.yaml",),
    )
    bad = []
    try:
        # Same tier 2, two more tier-1 instances: plaintext, and a client certificate of another CA.
        tier2 = f"[127.0.0.1:{dep.ports['tier2']['otlp_grpc']}]"
        bad.append(
            cs.start_collector("tier1-loadbalancer.yaml", tmp_path / "plain", name="tier1", TIER2_ENDPOINTS=tier2)
        )
        bad.append(
            cs.start_collector(
                "tier1-loadbalancer.yaml",
                tmp_path / "rogue",
                name="tier1",
                extra_configs=("tls/tier1.yaml",),
                TIER2_ENDPOINTS=tier2,
                **rogue,
            )
        )
        runs = {}
        for name, endpoint in (("good", dep.endpoint), ("plain", bad[0].endpoint), ("rogue", bad[1].endpoint)):
            out = tmp_path / f"{name}.json"
            runs[name] = rs.finish_loadgen(rs.start_loadgen(endpoint, out, traces=20, rate=50), out)
        acked = rs.key_set(runs["good"]["acked"])

        def judged():
            return acked <= set(rs.span_keys(dep.tier2_spans()))

        cs.wait_for(judged, 30, "the TLS tier 1's spans judged on tier 2")

        # The refused ones: tier 2 turned their handshakes down, their spans wait in their queues.
        # The rogue client reads tier 2's alert ("unknown certificate authority") or, when it wrote
        # first (TLS 1.3 checks the client certificate after the client's Finished), finds the
        # connection tier 2 closed ("broken pipe"): both are tier 2 turning it down.
        for col, evidence in (
            (bad[0], ("error reading server preface",)),
            (bad[1], ("unknown certificate authority", "broken pipe")),
        ):
            cs.wait_for(
                lambda evidence=evidence, col=col: any(
                    e in col.log.read_text(errors="replace").lower() for e in evidence
                ),
                30,
                f"a TLS refusal in {col.log}",
            )
        got = {t for t, _ in rs.span_keys(dep.tier2_spans())}
        for name in ("plain", "rogue"):
            assert not got & {t for t, _ in runs[name]["acked"]}, f"{name} tier 1 reached tier 2"
        assert rs.verdicts(dep.tier2_spans()) == {"continued": 20}
    finally:
        for col in bad:
            col.stop()
        dep.stop()
