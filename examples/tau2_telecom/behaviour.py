# ruff: noqa: E501  (a table of CEL expressions, each kept on the lines it reads best on)
"""The behaviour of tau2's telecom tools (tau2/domains/telecom/tools.py, user_tools.py and
the environment's sync) in the declarative tool language of docs/contract.md: build.py
writes each entry into the tool fixture of the same name, with the name, description and
parameters taken from tau2's own tool schemas.

The state document: the agent's side is tau2's ``TelecomDB`` with each list made a mapping
by ID (``customers``, ``lines``, ``bills``, ``plans``, ``devices``); the user's side is
tau2's ``TelecomUserDB`` (``device``, ``surroundings``), as tau2 dumps them in JSON mode
(enums as their values, dates as ``YYYY-MM-DD``).

The sync. tau2 copies agent-side facts into the user's surroundings after every step
(``TelecomEnvironment.sync_tools``: the line's status, its roaming, whether its data is
used up, a payment request for a bill awaiting payment) and a paid request back into the
bill. Only agent writes change those facts, and the user's ``make_payment`` the payment, so
the sync is folded into the 6 agent tools and the 1 user tool whose writes feed it: each
also writes what the sync would, when the line (or customer) is the user's own. Network
status is not part of the sync: it is refreshed only by the user's own actions (tau2's
``simulate_network_search``), here the shared definition ``search``.

What a write depends on is read before any step writes (a ``let``, or the response's
``when``), so that no step's reading depends on whether it sees an earlier step's write;
the network search after a write is given the written values as arguments:
``search(airplane, sim, pref, apn_broken)``. ``result_from`` reads the state after the
call, so the status bar a write answers is the new one.
"""

from __future__ import annotations

from typing import Any

TODAY = "2025-02-25"  # tau2's get_today()

# Shared definitions: the cel fixture ``telecom`` (fixtures/cel/telecom.yaml).
DEFINITIONS: dict[str, dict[str, Any]] = {
    "sim_state": {
        "expr": 'device.sim_card_missing ? "missing" : device.sim_card_status',
    },
    # tau2's simulate_network_search, given the values a write has just set.
    "search": {
        "params": ["airplane", "sim", "pref", "apn_broken"],
        "expr": (
            '(airplane || apn_broken || !surroundings.line_active || sim != "active")'
            ' ? {"status": "no_service", "tech": "none", "signal": "none"}'
            ' : cel.bind(tech, pref == "4g_5g_preferred"'
            ' ? (("5G" in surroundings.signal_strength'
            ' && surroundings.signal_strength["5G"] != "none") ? "5G" : "4G")'
            ' : pref == "4g_only" ? "4G" : pref == "3g_only" ? "3G"'
            ' : pref == "2g_only" ? "2G" : "4G",'
            ' {"status": "connected", "tech": tech,'
            ' "signal": tech in surroundings.signal_strength'
            ' ? surroundings.signal_strength[tech] : "none"})'
        ),
    },
    # tau2's _get_mobile_data_working, over the state as it is.
    "data_working": {
        "expr": (
            '!device.airplane_mode && device.network_signal_strength != "none"'
            ' && device.network_connection_status != "no_service"'
            " && (!surroundings.is_abroad"
            " || (device.roaming_enabled && surroundings.roaming_allowed))"
            " && device.data_enabled && !surroundings.mobile_data_usage_exceeded"
        ),
    },
    # tau2's _run_speed_test: the speed in Mbps (Python's arithmetic, in its order),
    # -1.0 when mobile data does not work.
    "speed": {
        "expr": (
            "!data_working() ? -1.0 : math.round("
            '({"2G": 0.1 + 0.4, "3G": 1.0 + 5.0, "4G": 10.0 + 100.0, "5G": 50.0 + 500.0,'
            ' "none": 0.0}[device.network_technology_connected] / 2.0'
            ' * {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0,'
            ' "none": 0.0}[device.network_signal_strength]'
            " * ((device.vpn_connected && device.vpn_details != null"
            ' && device.vpn_details.server_performance == "poor") ? 0.1 : 1.0)'
            " * (device.data_saver_mode ? 0.2 : 1.0)) * 100.0) / 100.0"
        ),
    },
    "speed_desc": {
        "params": ["s"],
        "expr": (
            's < 0.0 ? "No Connection" : s < 1.0 ? "Very Poor" : s < 5.0 ? "Poor"'
            ' : s < 25.0 ? "Fair" : s < 100.0 ? "Good" : "Excellent"'
        ),
    },
    # tau2's _can_send_mms.
    "can_mms": {
        "expr": (
            'data_working() && device.network_technology_connected != "2G"'
            " && !(device.wifi_calling_enabled && device.wifi_calling_mms_over_wifi)"
            " && device.active_apn_settings.mmsc_url != null"
            ' && "messaging" in device.app_statuses'
            " && device.app_statuses.messaging.permissions.storage"
            " && device.app_statuses.messaging.permissions.sms"
        ),
    },
    # tau2's _check_status_bar.
    "status_bar": {
        "expr": (
            '"Status Bar: " + (device.airplane_mode ? "✈️ Airplane Mode" : ('
            '{"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair",'
            ' "good": "📶³ Good", "excellent": "📶⁴ Excellent"}'
            "[device.network_signal_strength]"
            ' + (device.network_technology_connected != "none"'
            ' ? " | " + device.network_technology_connected : "")'
            ' + ((device.data_enabled && device.network_technology_connected != "none")'
            ' ? " | 📱 Data Enabled" + (device.data_saver_mode ? " | 🔽 Data Saver" : "")'
            ' : " | 📵 Data Disabled")))'
            " + ((device.wifi_enabled && device.wifi_connected)"
            ' ? (device.wifi_ssid != null ? " | 📡 Connected to " + device.wifi_ssid'
            ' : " | 📡 Enabled") : "")'
            ' + (device.vpn_connected ? " | 🔒 VPN Connected" : "")'
            ' + " | 🔋 " + string(device.battery_level) + "%"'
        ),
    },
    # A float as Python's str() writes it ("2.0", where CEL's string() writes "2").
    "py_float": {
        "params": ["x"],
        "expr": (
            'cel.bind(t, string(double(x)), t.contains(".") || t.contains("e")'
            ' || t.contains("N") || t.contains("I") ? t : t + ".0")'
        ),
    },
    # A non-negative float as Python's f"{x:.2f}" writes it.
    "fmt2": {
        "params": ["x"],
        "expr": (
            "cel.bind(c, int(math.round(double(x) * 100.0)),"
            ' string(c / 100) + "." + (c % 100 < 10 ? "0" : "") + string(c % 100))'
        ),
    },
    # An app's granted permissions, in the order of tau2's AppPermissions fields.
    "granted": {
        "params": ["app"],
        "expr": (
            '["sms", "storage", "phone", "network"].filter(p,'
            " p in device.app_statuses[app].permissions && device.app_statuses[app].permissions[p])"
        ),
    },
    # The installed apps in tau2's order (the user database's; no tool adds or removes an
    # app), then any other in the state's.
    "apps": {
        "expr": (
            'cel.bind(known, ["messaging", "browser"], known.filter(a, a in device.app_statuses)'
            " + device.app_statuses.map(a, a).filter(a, !(a in known)))"
        ),
    },
    # The customer tau2's get_customer_by_phone finds for a phone number.
    "customers_of": {
        "params": ["phone"],
        "expr": (
            "customers.filter(k, customers[k].phone_number == phone"
            " || customers[k].line_ids.exists(l, l in lines && lines[l].phone_number == phone))"
        ),
    },
    # The line of the user's phone is this one (the sync copies its facts).
    "is_users_line": {
        "params": ["line_id"],
        "expr": (
            "surroundings.phone_number != null"
            " && lines[line_id].phone_number == surroundings.phone_number"
        ),
    },
}


def _expand(expr: str, seen: tuple[str, ...] = ()) -> str:
    """The text with every call of a parameterless definition written in place (the
    final-state assertions cannot name a cel fixture)."""
    for name, d in DEFINITIONS.items():
        call = f"{name}()"
        if call in expr and not d.get("params"):
            if name in seen:
                raise ValueError(f"definition cycle at {name}")
            expr = expr.replace(call, "(" + _expand(d["expr"], (*seen, name)) + ")")
    return expr


# --- agent side ---------------------------------------------------------------------------

NOT_CUSTOMER = {
    "when": "!(args.customer_id in customers)",
    "error": {
        "code": "not_found",
        "message_from": '"Customer with ID " + args.customer_id + " not found"',
    },
}
NOT_LINE = {
    "when": "!(args.line_id in customers[args.customer_id].line_ids) || !(args.line_id in lines)",
    "error": {
        "code": "not_found",
        "message_from": '"Line " + args.line_id + " not found for customer " + args.customer_id',
    },
}


def _search(airplane: str, sim: str, pref: str, apn_broken: str) -> dict[str, Any]:
    """The let and steps of a network search after a write."""
    return {
        "let": {"net": f"search({airplane}, {sim}, {pref}, {apn_broken})"},
        "steps": [
            {"set": "device.network_connection_status", "value_from": "net.status"},
            {"set": "device.network_technology_connected", "value_from": "net.tech"},
            {"set": "device.network_signal_strength", "value_from": "net.signal"},
        ],
    }


SIM = "sim_state()"
PREF = "device.network_mode_preference"
APN_BROKEN = 'device.active_apn_settings.apn_name == "broken"'
AIRPLANE = "device.airplane_mode"


def _user_write(
    steps: list[dict[str, Any]],
    result: str,
    search: dict[str, Any] | None = None,
    let: dict[str, str] | None = None,
    when: str | None = None,
) -> dict[str, Any]:
    response: dict[str, Any] = {}
    if when is not None:
        response["when"] = when
    lets = dict(let or {})
    all_steps = list(steps)
    if search is not None:
        lets.update(search["let"])
        all_steps += search["steps"]
    if lets:
        response["let"] = lets
    if all_steps:
        response["state_change"] = all_steps
    response["result_from"] = result
    return response


BEHAVIOUR: dict[str, dict[str, Any]] = {
    "get_customer_by_phone": {
        "side_effect": False,
        "uses": ["telecom"],
        "responses": [
            {
                "when": "size(customers_of(args.phone_number)) > 0",
                "result_from": "customers[customers_of(args.phone_number)[0]]",
            },
            {
                "error": {
                    "code": "not_found",
                    "message_from": '"Customer with phone number " + args.phone_number + " not found"',
                }
            },
        ],
    },
    "get_customer_by_id": {
        "side_effect": False,
        "responses": [
            {"when": "args.customer_id in customers", "result_from": "customers[args.customer_id]"},
            {"error": NOT_CUSTOMER["error"]},
        ],
    },
    "get_customer_by_name": {
        "side_effect": False,
        "responses": [
            {
                "result_from": (
                    "customers.filter(k, customers[k].full_name.lowerAscii()"
                    " == args.full_name.lowerAscii() && customers[k].date_of_birth == args.dob)"
                    ".map(k, customers[k])"
                )
            }
        ],
    },
    "get_details_by_id": {
        "side_effect": False,
        "responses": [
            {
                "when": 'args.id.startsWith("L") && args.id in lines',
                "result_from": "lines[args.id]",
            },
            {
                "when": 'args.id.startsWith("D") && args.id in devices',
                "result_from": "devices[args.id]",
            },
            {
                "when": 'args.id.startsWith("B") && args.id in bills',
                "result_from": "bills[args.id]",
            },
            {
                "when": 'args.id.startsWith("C") && args.id in customers',
                "result_from": "customers[args.id]",
            },
            {
                "when": 'args.id.startsWith("P") && args.id in plans',
                "result_from": "plans[args.id]",
            },
            {
                "when": 'args.id.startsWith("L")',
                "error": {
                    "code": "not_found",
                    "message_from": '"Line with ID " + args.id + " not found"',
                },
            },
            {
                "when": 'args.id.startsWith("D")',
                "error": {
                    "code": "not_found",
                    "message_from": '"Device with ID " + args.id + " not found"',
                },
            },
            {
                "when": 'args.id.startsWith("B")',
                "error": {
                    "code": "not_found",
                    "message_from": '"Bill with ID " + args.id + " not found"',
                },
            },
            {
                "when": 'args.id.startsWith("C")',
                "error": {
                    "code": "not_found",
                    "message_from": '"Customer with ID " + args.id + " not found"',
                },
            },
            {
                "when": 'args.id.startsWith("P")',
                "error": {
                    "code": "not_found",
                    "message_from": '"Plan with ID " + args.id + " not found"',
                },
            },
            {
                "error": {
                    "code": "invalid",
                    "message_from": '"Unknown ID format or type: " + args.id',
                }
            },
        ],
    },
    "suspend_line": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            NOT_CUSTOMER,
            NOT_LINE,
            {
                "when": 'lines[args.line_id].status != "Active"',
                "error": {"code": "invalid", "message": "Line must be active to suspend"},
            },
            {
                "state_change": [
                    {"set": "lines.{args.line_id}.status", "value": "Suspended"},
                    {"set": "lines.{args.line_id}.suspension_start_date", "value": TODAY},
                    {
                        "when": "is_users_line(args.line_id)",
                        "set": "surroundings.line_active",
                        "value": False,
                    },
                ],
                "result_from": (
                    '{"message": "Line suspended successfully. $5/month holding fee will apply.",'
                    ' "line": lines[args.line_id]}'
                ),
            },
        ],
    },
    "resume_line": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            NOT_CUSTOMER,
            NOT_LINE,
            {
                "when": '!(lines[args.line_id].status in ["Suspended", "Pending Activation"])',
                "error": {"code": "invalid", "message": "Line must be suspended to resume"},
            },
            {
                "state_change": [
                    {"set": "lines.{args.line_id}.status", "value": "Active"},
                    {"set": "lines.{args.line_id}.suspension_start_date", "value": None},
                    {
                        "when": "is_users_line(args.line_id)",
                        "set": "surroundings.line_active",
                        "value": True,
                    },
                ],
                "result_from": '{"message": "Line resumed successfully", "line": lines[args.line_id]}',
            },
        ],
    },
    "get_bills_for_customer": {
        "side_effect": False,
        "responses": [
            NOT_CUSTOMER,
            # tau2 sorts by issue date, newest first: CEL has no sort, so the bills come in
            # the customer's order (docs/tau2-telecom.md, what differs).
            {
                "result_from": "customers[args.customer_id].bill_ids.filter(b, b in bills).map(b, bills[b])"
            },
        ],
    },
    "send_payment_request": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            NOT_CUSTOMER,
            {
                "when": (
                    "customers[args.customer_id].bill_ids.exists(b, b in bills"
                    ' && bills[b].status == "Awaiting Payment")'
                ),
                "error": {
                    "code": "invalid",
                    "message": "A bill is already awaiting payment for this customer",
                },
            },
            {
                "when": "!(args.bill_id in customers[args.customer_id].bill_ids) || !(args.bill_id in bills)",
                "error": {
                    "code": "not_found",
                    "message_from": '"Bill " + args.bill_id + " not found for customer " + args.customer_id',
                },
            },
            {
                "state_change": [
                    {"set": "bills.{args.bill_id}.status", "value": "Awaiting Payment"},
                    # The sync: the user gets the request when the customer is theirs.
                    {
                        "when": (
                            "surroundings.phone_number != null && surroundings.payment_request == null"
                            " && size(customers_of(surroundings.phone_number)) > 0"
                            " && customers_of(surroundings.phone_number)[0] == args.customer_id"
                        ),
                        "set": "surroundings.payment_request",
                        "value_from": (
                            '{"bill_id": args.bill_id, "amount_due": bills[args.bill_id].total_due,'
                            ' "paid": false}'
                        ),
                    },
                ],
                "result_from": '"Payment request sent to the customer for bill " + args.bill_id',
            },
        ],
    },
    "get_data_usage": {
        "side_effect": False,
        "responses": [
            NOT_CUSTOMER,
            NOT_LINE,
            {
                "when": "!(lines[args.line_id].plan_id in plans)",
                "error": {
                    "code": "not_found",
                    "message_from": '"Plan with ID " + lines[args.line_id].plan_id + " not found"',
                },
            },
            {
                "result_from": (
                    '{"line_id": args.line_id, "data_used_gb": lines[args.line_id].data_used_gb,'
                    ' "data_limit_gb": plans[lines[args.line_id].plan_id].data_limit_gb,'
                    ' "data_refueling_gb": lines[args.line_id].data_refueling_gb,'
                    ' "cycle_end_date": "2025-02-28"}'
                )
            },
        ],
    },
    "enable_roaming": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            NOT_CUSTOMER,
            NOT_LINE,
            {
                "when": "lines[args.line_id].roaming_enabled",
                "result": "Roaming was already enabled",
            },
            {
                "state_change": [
                    {"set": "lines.{args.line_id}.roaming_enabled", "value": True},
                    {
                        "when": "is_users_line(args.line_id)",
                        "set": "surroundings.roaming_allowed",
                        "value": True,
                    },
                ],
                "result": "Roaming enabled successfully",
            },
        ],
    },
    "disable_roaming": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            NOT_CUSTOMER,
            NOT_LINE,
            {
                "when": "!lines[args.line_id].roaming_enabled",
                "result": "Roaming was already disabled",
            },
            {
                "state_change": [
                    {"set": "lines.{args.line_id}.roaming_enabled", "value": False},
                    {
                        "when": "is_users_line(args.line_id)",
                        "set": "surroundings.roaming_allowed",
                        "value": False,
                    },
                ],
                "result": "Roaming disabled successfully",
            },
        ],
    },
    "transfer_to_human_agents": {
        "side_effect": False,
        "responses": [{"result": "Transfer successful", "ends_conversation": True}],
    },
    "refuel_data": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            NOT_CUSTOMER,
            NOT_LINE,
            {
                "when": "args.gb_amount <= 0.0",
                "error": {"code": "invalid", "message": "Refuel amount must be positive"},
            },
            {
                "when": "!(lines[args.line_id].plan_id in plans)",
                "error": {"code": "not_found", "message": "Plan not found for this line"},
            },
            {
                "let": {
                    "price": "plans[lines[args.line_id].plan_id].data_refueling_price_per_gb",
                    "charge": "double(args.gb_amount) * double(price)",
                    "drafts": (
                        "customers[args.customer_id].bill_ids.filter(b, b in bills"
                        ' && bills[b].status == "Draft")'
                    ),
                    "item": (
                        '{"description": "Data refueling: " + py_float(args.gb_amount)'
                        ' + " GB at $" + py_float(price) + "/GB", "amount": charge,'
                        f' "date": "{TODAY}", "item_type": charge < 0.0 ? "Credit" : "Charge"}}'
                    ),
                    # tau2 names a new draft bill B + 8 random hex digits; here B + the call's
                    # index (check.py maps one to the other).
                    "new_bill": '"Bref" + string(call.index)',
                    # The sync's test, on the refuelled amount (a let: computed before the
                    # steps, whatever a step reads of another's write).
                    "exceeded": (
                        "lines[args.line_id].data_used_gb >= plans[lines[args.line_id].plan_id].data_limit_gb"
                        " + (lines[args.line_id].data_refueling_gb + double(args.gb_amount))"
                    ),
                },
                "state_change": [
                    {
                        "increment": "lines.{args.line_id}.data_refueling_gb",
                        "by_from": "double(args.gb_amount)",
                    },
                    {
                        "when": "size(drafts) > 0",
                        "append": "bills.{drafts[0]}.line_items",
                        "value_from": "item",
                    },
                    {
                        "when": "size(drafts) > 0",
                        "increment": "bills.{drafts[0]}.total_due",
                        "by_from": "charge",
                    },
                    {
                        "when": "size(drafts) == 0",
                        "set": "bills.{new_bill}",
                        "value_from": (
                            '{"bill_id": new_bill, "customer_id": args.customer_id,'
                            ' "period_start": "2025-03-01", "period_end": "2025-03-31",'
                            ' "issue_date": "2025-03-01", "total_due": 0.0 + charge,'
                            ' "due_date": "2025-03-15", "status": "Draft", "line_items": [item]}'
                        ),
                    },
                    {
                        "when": "size(drafts) == 0",
                        "append": "customers.{args.customer_id}.bill_ids",
                        "value_from": "new_bill",
                    },
                    # The sync: is the user's data still used up?
                    {
                        "when": "is_users_line(args.line_id)",
                        "set": "surroundings.mobile_data_usage_exceeded",
                        "value_from": "exceeded",
                    },
                ],
                "result_from": (
                    '{"message": "Successfully added " + py_float(args.gb_amount) + " GB of data for line "'
                    ' + args.line_id + " for $" + string(math.round(charge * 100.0) / 100.0),'
                    ' "new_data_refueling_gb": lines[args.line_id].data_refueling_gb, "charge": charge}'
                ),
            },
        ],
    },
}

# --- user side ----------------------------------------------------------------------------

DEFAULT_APN = {
    "apn_name": "internet",
    "reset_at_reboot": False,
    "mms_apn": "mms",
    "mmsc_url": "http://mms.carrier.com/mms/wapenc",
    "mms_proxy": None,
    "mms_port": None,
}
VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}
MODES = ["4g_5g_preferred", "4g_only", "3g_only", "2g_only"]
BAR = "status_bar()"


def _read(expr: str) -> dict[str, Any]:
    return {"side_effect": False, "uses": ["telecom"], "responses": [{"result_from": expr}]}


def _onoff(x: str) -> str:
    return f'({x} ? "ON" : "OFF")'


def _yesno(x: str) -> str:
    return f'({x} ? "Yes" : "No")'


def _toggle(field: str, label: str, search: bool) -> dict[str, Any]:
    new = f"!device.{field}"
    args = {"airplane": AIRPLANE, "sim": SIM, "pref": PREF, "apn_broken": APN_BROKEN}
    return {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            _user_write(
                [{"set": f"device.{field}", "value_from": new}],
                f'"{label} is now " + {_onoff("device." + field)} + ".\\n" + {BAR}',
                _search(**args) if search else None,
            )
        ],
    }


PERMS = "device.app_statuses[args.app_name].permissions"

USER_BEHAVIOUR: dict[str, dict[str, Any]] = {
    "check_status_bar": _read(BAR),
    "check_network_status": _read(
        '"Airplane Mode: " + '
        + _onoff(AIRPLANE)
        + ' + "\\nSIM Card Status: " + sim_state()'
        + ' + "\\nCellular Connection: " + device.network_connection_status'
        + ' + "\\nCellular Signal: " + device.network_signal_strength'
        + ' + "\\nCellular Network Type: " + device.network_technology_connected'
        + ' + "\\nMobile Data Enabled: " + '
        + _yesno("device.data_enabled")
        + ' + "\\nData Roaming Enabled: " + '
        + _yesno("device.roaming_enabled")
        + ' + "\\nWi-Fi Radio: " + '
        + _onoff("device.wifi_enabled")
        + ' + "\\nWi-Fi Connected: " + '
        + _yesno("device.wifi_connected")
        + ' + (device.wifi_connected ? "\\nConnected Wi-Fi Network: " + string(device.wifi_ssid) : "")'
    ),
    "check_network_mode_preference": _read(
        '"Network Mode Preference: " + device.network_mode_preference'
    ),
    "set_network_mode_preference": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            {
                "when": f"!(args.mode in {MODES!r})".replace("'", '"'),
                "result_from": (
                    '"Failed to set network mode: \'" + args.mode + "\' is not a valid option.'
                    f' Please use one of: {", ".join(MODES)}\\n" + {BAR}'
                ),
            },
            _user_write(
                [{"set": "device.network_mode_preference", "value_from": "args.mode"}],
                f'"Preferred Network Mode set to: " + args.mode + "\\n" + {BAR}',
                _search(AIRPLANE, SIM, "args.mode", APN_BROKEN),
            ),
        ],
    },
    "run_speed_test": _read(
        'cel.bind(s, speed(), s < 0.0 ? "Speed test failed: No Connection."'
        ' : "Speed Test Result: " + fmt2(s) + " Mbps (" + speed_desc(s) + "). " + {'
        '"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",'
        ' "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",'
        ' "Fair": "Connection is okay for web browsing and some standard definition streaming.",'
        ' "Good": "Connection is good for most activities, including HD streaming.",'
        ' "Excellent": "Connection is very fast."}[speed_desc(s)])'
    ),
    "toggle_airplane_mode": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            _user_write(
                [
                    {"set": "device.airplane_mode", "value_from": "!was_on"},
                    # Off to on drops Wi-Fi and the VPN; on to off drops Wi-Fi when it is on.
                    {
                        "when": "!was_on || device.wifi_enabled",
                        "set": "device.wifi_connected",
                        "value": False,
                    },
                    {
                        "when": "!was_on || device.wifi_enabled",
                        "set": "device.wifi_ssid",
                        "value": None,
                    },
                    {
                        "when": "!was_on || device.wifi_enabled",
                        "set": "device.wifi_signal_strength",
                        "value": "none",
                    },
                    {
                        "when": "!was_on && vpn_was",
                        "set": "device.vpn_connected",
                        "value": False,
                    },
                    {
                        "when": "!was_on && vpn_was",
                        "set": "device.vpn_details",
                        "value": None,
                    },
                ],
                f'"Airplane Mode is now " + {_onoff(AIRPLANE)} + ".\\n" + {BAR}',
                _search("!was_on", SIM, PREF, APN_BROKEN),
                let={"was_on": "device.airplane_mode", "vpn_was": "device.vpn_connected"},
            )
        ],
    },
    "check_sim_status": _read(
        '{"active": "Your SIM card is active and working.",'
        ' "missing": "No SIM card detected in the phone.",'
        ' "locked_pin": "The SIM card is locked with a PIN code.",'
        ' "locked_puk": "The SIM card is locked with a PUK code."}[sim_state()]'
    ),
    "reseat_sim_card": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            _user_write(
                [{"set": "device.sim_card_missing", "value": False}],
                f'"SIM card re-seated successfully.\\n" + {BAR}',
                _search(AIRPLANE, "device.sim_card_status", PREF, APN_BROKEN),
            )
        ],
    },
    "toggle_data": _toggle("data_enabled", "Mobile Data", True),
    "toggle_roaming": _toggle("roaming_enabled", "Data Roaming", True),
    "check_data_restriction_status": _read(
        'device.data_saver_mode ? "Data Saver mode is ON (limits data usage)." : "Data Saver mode is OFF."'
    ),
    "toggle_data_saver_mode": _toggle("data_saver_mode", "Data Saver Mode", False),
    "check_apn_settings": _read(
        '"Current APN Name: " + device.active_apn_settings.apn_name'
        ' + "\\nMMSC URL (for picture messages): " + (device.active_apn_settings.mmsc_url != null'
        ' ? device.active_apn_settings.mmsc_url : "Not Set")'
        ' + "\\n(These are technical settings, usually best left unchanged.)"'
    ),
    "set_apn_settings": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            {
                "when": 'has(args.apn_settings.apn_name) && !(args.apn_settings.apn_name in ["internet", "broken"])',
                "error": {
                    "code": "invalid",
                    "message": "Invalid APN settings: apn_name is internet or broken",
                },
            },
            _user_write(
                [{"set": "device.active_apn_settings", "value_from": "apn"}],
                f'"APN settings set to: " + apn.apn_name + "\\n" + {BAR}',
                _search(AIRPLANE, SIM, PREF, 'apn.apn_name == "broken"'),
                # tau2's APNSettings(**apn_settings): each field its default when not given.
                let={
                    "apn": "{"
                    + ", ".join(
                        f'"{k}": has(args.apn_settings.{k}) ? args.apn_settings.{k} : '
                        + ("null" if v is None else ("false" if v is False else f'"{v}"'))
                        for k, v in DEFAULT_APN.items()
                    )
                    + "}"
                },
            ),
        ],
    },
    "reset_apn_settings": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            _user_write(
                [{"set": "device.active_apn_settings.reset_at_reboot", "value": True}],
                f'"APN settings will reset at reboot.\\n" + {BAR}',
                _search(AIRPLANE, SIM, PREF, APN_BROKEN),
            )
        ],
    },
    "check_wifi_status": _read(
        '!device.wifi_enabled ? "Wi-Fi is turned OFF." : device.wifi_connected'
        ' ? "Wi-Fi is ON and connected to \'" + string(device.wifi_ssid) + "\'. Signal strength: "'
        ' + device.wifi_signal_strength + "." : "Wi-Fi is ON but not connected to any network."'
    ),
    "toggle_wifi": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            {
                "when": "device.airplane_mode",
                "result_from": f'"Cannot change Wi-Fi settings while Airplane Mode is ON.\\n" + {BAR}',
            },
            _user_write(
                [
                    {"set": "device.wifi_enabled", "value_from": "!was_on"},
                    {"when": "was_on", "set": "device.wifi_connected", "value": False},
                    {"when": "was_on", "set": "device.wifi_ssid", "value": None},
                    {
                        "when": "was_on",
                        "set": "device.wifi_signal_strength",
                        "value": "none",
                    },
                ],
                f'"Wi-Fi is now " + {_onoff("device.wifi_enabled")} + ".\\n" + {BAR}',
                let={"was_on": "device.wifi_enabled"},
            ),
        ],
    },
    "check_wifi_calling_status": _read(
        '"Wi-Fi Calling is currently turned " + ' + _onoff("device.wifi_calling_enabled") + ' + "."'
    ),
    "toggle_wifi_calling": _toggle("wifi_calling_enabled", "Wi-Fi Calling", False),
    "check_vpn_status": _read(
        'device.vpn_connected ? (device.vpn_details != null ? "VPN is ON and connected. Details: "'
        # Python's repr of tau2's model_dump(): strings quoted, the enum as <Class.NAME: value>
        " + cel.bind(d, device.vpn_details, \"{'server_address': \" + (d.server_address == null"
        ' ? "None" : "\'" + d.server_address + "\'") + ", \'protocol\': " + (d.protocol == null'
        ' ? "None" : "\'" + d.protocol + "\'") + ", \'server_performance\': <PerformanceLevel."'
        ' + d.server_performance.upperAscii() + ": \'" + d.server_performance + "\'>}")'
        ' : "VPN is ON and connected (no specific details available).")'
        ' : device.vpn_enabled_setting ? "VPN is turned ON in settings, but currently not connected."'
        ' : "VPN is turned OFF."'
    ),
    "connect_vpn": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            {"when": "device.vpn_connected", "result": "VPN already connected."},
            _user_write(
                [
                    {"set": "device.vpn_connected", "value": True},
                    {"set": "device.vpn_details", "value": VPN},
                ],
                f'"VPN connected successfully.\\n" + {BAR}',
            ),
        ],
    },
    "disconnect_vpn": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            {
                "when": "!device.vpn_connected",
                "result_from": f'"No active VPN connection to disconnect.\\n" + {BAR}',
            },
            _user_write(
                [
                    {"set": "device.vpn_connected", "value": False},
                    {"set": "device.vpn_details", "value": None},
                ],
                f'"VPN disconnected successfully.\\n" + {BAR}',
            ),
        ],
    },
    "check_installed_apps": _read(
        '"The following apps are installed on the phone: " + apps().join(", ")'
    ),
    "check_app_status": {
        "side_effect": False,
        "uses": ["telecom"],
        "responses": [
            {
                "when": "!(args.app_name in device.app_statuses)",
                "result_from": '"App \'" + args.app_name + "\' not found on this phone."',
            },
            {
                "result_from": (
                    "cel.bind(g, granted(args.app_name),"
                    ' "Status for App: " + args.app_name + (size(g) == 0'
                    ' ? "\\n - Permissions: None granted."'
                    ' : "\\n - Permissions Granted:" + g.map(p, "\\n   - " + p).join("")))'
                )
            },
        ],
    },
    "check_app_permissions": {
        "side_effect": False,
        "uses": ["telecom"],
        "responses": [
            {
                "when": "!(args.app_name in device.app_statuses)",
                "result_from": '"App \'" + args.app_name + "\' not found on this phone."',
            },
            {
                "result_from": (
                    "cel.bind(g, granted(args.app_name), size(g) == 0"
                    ' ? "App \'" + args.app_name + "\' currently has no permissions granted."'
                    ' : "App \'" + args.app_name + "\' has permission for: " + g.join(", ") + ".")'
                )
            },
        ],
    },
    "grant_app_permission": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            {
                "when": "!(args.app_name in device.app_statuses)",
                "result_from": (
                    '"Error. App \'" + args.app_name + "\' not found. Cannot grant permission.\\n" + '
                    + BAR
                ),
            },
            {
                "when": f"!(args.permission.lowerAscii() in {PERMS})",
                "result_from": (
                    '"Error. Permission \'" + args.permission.lowerAscii() + "\' not tracked for app \'"'
                    f' + args.app_name + "\', available permissions: " + string({PERMS}.map(p, p)) + "\\n" + {BAR}'
                ),
            },
            {
                "state_change": [
                    {
                        "set": "device.app_statuses.{args.app_name}.permissions.{args.permission.lowerAscii()}",
                        "value": True,
                    }
                ],
                "result_from": (
                    '"Success. Permission \'" + args.permission.lowerAscii() + "\' granted to app \'"'
                    f' + args.app_name + "\'.\\n" + {BAR}'
                ),
            },
        ],
    },
    "can_send_mms": _read(
        'can_mms() ? "Your messaging app can send MMS messages."'
        ' : "Your messaging app cannot send MMS messages."'
    ),
    "reboot_device": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            _user_write(
                [
                    {
                        "when": "device.active_apn_settings.reset_at_reboot",
                        "set": "device.active_apn_settings",
                        "value": DEFAULT_APN,
                    }
                ],
                '"Restarting network services...\\n" + ' + BAR,
                _search(
                    AIRPLANE,
                    SIM,
                    PREF,
                    "!device.active_apn_settings.reset_at_reboot && " + APN_BROKEN,
                ),
                when="!device.active_apn_settings.reset_at_reboot",
            ),
            _user_write(
                [
                    {"set": "device.active_apn_settings", "value": DEFAULT_APN},
                ],
                '"Resetting APN settings...\\nRestarting network services...\\n" + ' + BAR,
                _search(AIRPLANE, SIM, PREF, "false"),
            ),
        ],
    },
    "check_payment_request": _read(
        'surroundings.payment_request == null ? "No payment request has been made."'
        ' : "You have a payment request for bill " + surroundings.payment_request.bill_id'
        ' + " of " + py_float(surroundings.payment_request.amount_due) + " USD."'
    ),
    "make_payment": {
        "side_effect": True,
        "uses": ["telecom"],
        "responses": [
            {
                "when": "surroundings.payment_request == null",
                "result": "You do not have a payment request.",
            },
            {
                # The sync: the paid request marks the bill paid and is cleared; a request
                # follows for the next bill awaiting payment, if any.
                "let": {
                    "req": "surroundings.payment_request",
                    "next": (
                        "customers_of(surroundings.phone_number).map(c, customers[c].bill_ids"
                        ".filter(b, b in bills && b != surroundings.payment_request.bill_id"
                        ' && bills[b].status == "Awaiting Payment"))'
                    ),
                },
                "state_change": [
                    {"set": "bills.{req.bill_id}.status", "value": "Paid"},
                    {"set": "surroundings.payment_request", "value": None},
                    {
                        "when": "size(next) > 0 && size(next[0]) > 0",
                        "set": "surroundings.payment_request",
                        "value_from": (
                            '{"bill_id": next[0][0], "amount_due": bills[next[0][0]].total_due, "paid": false}'
                        ),
                    },
                ],
                "result_from": (
                    '"Payment of " + py_float(req.amount_due) + " USD has been made for bill " + req.bill_id + "."'
                ),
            },
        ],
    },
}


# --- tau2's assertions, as final-state assertions -----------------------------------------


def _lit(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(float(v))


def assertion(func: str, args: dict[str, Any], value: bool) -> str:
    """tau2's assertion function ``func`` over the final state, as CEL (true when tau2's
    function returns ``value``)."""
    if func == "assert_can_send_mms":
        expr = f"(can_mms() == {_lit(args['expected_status'])})"
    elif func == "assert_mobile_data_status":
        expr = f"(data_working() == {_lit(args['expected_status'])})"
    elif func == "assert_service_status":
        expr = f"(device.network_connection_status == {_lit(args['expected_status'])})"
    elif func == "assert_internet_speed":
        speed = "(speed() < 0.0 ? 0.0 : speed())"
        expr = f"({speed} >= {_lit(args['expected_speed'])}"
        if args.get("expected_desc") is not None:
            desc = f"cel.bind(s, speed(), {DEFINITIONS['speed_desc']['expr']})"
            expr += f" && {desc}.lowerAscii() == {_lit(str(args['expected_desc']).lower())}"
        expr += ")"
    elif func == "assert_data_refueling_amount":
        line = f"lines[{_lit(args['line_id'])}]"
        d = f"({line}.data_refueling_gb - {_lit(args['expected_amount'])})"
        expr = (
            f"({_lit(args['line_id'])} in customers[{_lit(args['customer_id'])}].line_ids"
            f" && {d} < 1e-6 && {d} > -1e-6)"
        )
    elif func == "assert_no_overdue_bill":
        b = _lit(args["overdue_bill_id"])
        expr = f'(!({b} in bills) || bills[{b}].status == "Paid")'
    else:
        raise ValueError(f"no CEL for tau2's {func}")
    expr = _expand(expr)
    return expr if value else f"!{expr}"


# The side-effect policy of each agent write tool, declared once in its fixture (as for
# retail, examples/tau2_retail/policies.yaml): tau2's policy asks for the user's explicit
# confirmation, which tau2's evaluator does not check, so confirmation_required is false.
_CUSTOMER = "args.customer_id in customers"
POLICIES: dict[str, dict[str, Any]] = {
    "suspend_line": {
        "precondition": [_CUSTOMER],
        "confirmation_required": False,
        "allowed_state_transition": [
            {"path": "lines.{args.line_id}.status", "from": ["Active"], "to": ["Suspended"]}
        ],
        "forbidden_state_transition": [],
        "audit_requirement": ["tool_args"],
    },
    "resume_line": {
        "precondition": [_CUSTOMER],
        "confirmation_required": False,
        "allowed_state_transition": [
            {
                "path": "lines.{args.line_id}.status",
                "from": ["Suspended", "Pending Activation"],
                "to": ["Active"],
            }
        ],
        "forbidden_state_transition": [],
        "audit_requirement": ["tool_args"],
    },
    "send_payment_request": {
        "precondition": [_CUSTOMER],
        "confirmation_required": False,
        "allowed_state_transition": [],
        "forbidden_state_transition": [],
        "audit_requirement": ["tool_args"],
    },
    "enable_roaming": {
        "precondition": [_CUSTOMER],
        "confirmation_required": False,
        "allowed_state_transition": [],
        "forbidden_state_transition": [],
        "audit_requirement": ["tool_args"],
    },
    "disable_roaming": {
        "precondition": [_CUSTOMER],
        "confirmation_required": False,
        "allowed_state_transition": [],
        "forbidden_state_transition": [],
        "audit_requirement": ["tool_args"],
    },
    "refuel_data": {
        "precondition": [_CUSTOMER],
        "confirmation_required": False,
        "allowed_state_transition": [],
        "forbidden_state_transition": [],
        "audit_requirement": ["tool_args"],
    },
}
