"""Where the hostile tests listen: the host's address on Docker's default bridge.

No engine needed: the fallback order is checked on ``docker network inspect`` attrs, and
the interface lookup on the loopback interface.
"""

from __future__ import annotations

import pytest

from tests.hostile.conftest import bridge_address_from, bridge_interface, interface_ipv4

# Debian's engine 20.10 (docker.io): the default bridge has a subnet and no gateway
DEBIAN_20_10 = {
    "Name": "bridge", "Driver": "bridge",
    "IPAM": {"Driver": "default", "Options": None, "Config": [{"Subnet": "172.17.0.0/16"}]},
    "Options": {"com.docker.network.bridge.default_bridge": "true",
                "com.docker.network.bridge.name": "docker0"},
}


def with_config(*configs: dict, options: dict | None = None) -> dict:
    return {**DEBIAN_20_10, "IPAM": {"Config": list(configs)}, "Options": options or {}}


def test_gateway_wins_when_the_engine_reports_one():
    attrs = with_config({"Subnet": "172.17.0.0/16", "Gateway": "172.17.0.1"})
    assert bridge_address_from(attrs, "10.9.9.9") == "172.17.0.1"


def test_without_gateway_the_bridge_interface_address_is_used():
    assert bridge_address_from(DEBIAN_20_10, "172.17.0.1") == "172.17.0.1"
    assert bridge_address_from(with_config({"Subnet": "10.1.0.0/24"}), "10.1.0.77") == "10.1.0.77"


def test_without_gateway_or_interface_the_subnets_first_host():
    assert bridge_address_from(DEBIAN_20_10, None) == "172.17.0.1"
    assert bridge_address_from(with_config({"Subnet": "10.1.2.0/24"}), None) == "10.1.2.1"


def test_ipv6_configs_are_passed_over():
    attrs = with_config({"Subnet": "fd00::/64", "Gateway": "fd00::1"}, {"Subnet": "10.3.0.0/16"})
    assert bridge_address_from(attrs, None) == "10.3.0.1"


def test_nothing_known_is_a_clear_error():
    with pytest.raises(LookupError, match="no gateway, no address on interface 'docker0'"):
        bridge_address_from({"Name": "bridge", "IPAM": {"Config": None}}, None)


def test_the_interface_is_the_bridge_name_option_or_docker0():
    assert bridge_interface(DEBIAN_20_10) == "docker0"
    assert bridge_interface(with_config(options={"com.docker.network.bridge.name": "br0"})) == "br0"
    assert bridge_interface({"Options": None}) == "docker0"


def test_interface_address_comes_from_the_kernel():
    assert interface_ipv4("lo") == "127.0.0.1"
    assert interface_ipv4("rg-no-such-if") is None
