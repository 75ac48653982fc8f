"""The official `openai` and `anthropic` Python clients against the tool-calling gateway.

Run by tests/gateway_clients.rs, which starts a replay upstream (recorded model text) and
one gateway per protocol, and passes their addresses in the environment:

- GATEWAYS: a JSON object, protocol id -> the gateway's base URL (`http://…/v1`);
- QUICK: a gateway (protocol vcp) whose time limit is short, for the faults.

Each check prints one line; the first failed assertion ends the script with an error.
"""

import json
import os
import sys

import anthropic
import openai

GATEWAYS = json.loads(os.environ["GATEWAYS"])
QUICK = os.environ["QUICK"]

# The recorded reply each protocol's gateway is tested with.
SCENARIOS = {
    "vcp": "vcp_parallel",
    "hermes": "hermes_parallel",
    "mistral": "mistral_parallel",
    "pythonic": "pythonic_parallel",
}

EXPECTED = [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "Europe/Paris"})]
RESULTS = {"get_weather": "18C sunny", "get_time": "10:00"}
ROUND_TWO = "Round two: the weather and the time arrived in a user message."

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIME_SCHEMA = {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}
CHAT_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER_SCHEMA}},
    {"type": "function", "function": {"name": "get_time", "description": "The time in a zone.", "parameters": TIME_SCHEMA}},
]
RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER_SCHEMA},
    {"type": "function", "name": "get_time", "description": "The time in a zone.", "parameters": TIME_SCHEMA},
]
ANTHROPIC_TOOLS = [
    {"name": "get_weather", "description": "The weather in a city.", "input_schema": WEATHER_SCHEMA},
    {"name": "get_time", "description": "The time in a zone.", "input_schema": TIME_SCHEMA},
]


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def ok(line):
    print("ok:", line, flush=True)


def openai_client(url):
    return openai.OpenAI(base_url=url, api_key="test-key", max_retries=0, timeout=20)


def anthropic_client(url):
    # The Anthropic SDK posts to {base_url}/v1/messages.
    return anthropic.Anthropic(base_url=url[: -len("/v1")], api_key="test-key", max_retries=0, timeout=20)


def question(scenario):
    return f"Weather and time in Paris? replay:{scenario}"


# ---------------------------------------------------------------------------------------
# Chat Completions


def chat_calls(message_calls):
    return [(c.function.name, json.loads(c.function.arguments)) for c in message_calls]


def chat(protocol, url, scenario):
    client = openai_client(url)
    messages = [{"role": "user", "content": question(scenario)}]
    reply = client.chat.completions.create(model="replay", messages=messages, tools=CHAT_TOOLS)
    choice = reply.choices[0]
    check(choice.finish_reason == "tool_calls", f"{protocol}: finish {choice.finish_reason}")
    check(chat_calls(choice.message.tool_calls) == EXPECTED, f"{protocol}: {choice.message.tool_calls}")
    ok(f"chat {protocol}: two calls")

    # Streamed: calls assembled from the chunks by index.
    calls = {}
    finish = None
    for chunk in client.chat.completions.create(model="replay", messages=messages, tools=CHAT_TOOLS, stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        for part in delta.tool_calls or []:
            entry = calls.setdefault(part.index, {"id": None, "name": "", "arguments": ""})
            entry["id"] = entry["id"] or part.id
            entry["name"] += (part.function.name or "") if part.function else ""
            entry["arguments"] += (part.function.arguments or "") if part.function else ""
        finish = chunk.choices[0].finish_reason or finish
    streamed = [(calls[i]["name"], json.loads(calls[i]["arguments"])) for i in sorted(calls)]
    check(streamed == EXPECTED, f"{protocol} streamed: {streamed}")
    check(finish == "tool_calls", f"{protocol} streamed finish: {finish}")
    ok(f"chat {protocol}: two calls streamed")

    # Round two: the calls and their results go back.
    history = messages + [
        {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in choice.message.tool_calls]}
    ]
    for call in choice.message.tool_calls:
        history.append({"role": "tool", "tool_call_id": call.id, "content": RESULTS[call.function.name]})
    second = client.chat.completions.create(model="replay", messages=history, tools=CHAT_TOOLS)
    check(second.choices[0].message.content == ROUND_TWO, f"{protocol}: {second.choices[0].message.content}")
    check(second.choices[0].finish_reason == "stop", f"{protocol}: {second.choices[0].finish_reason}")
    ok(f"chat {protocol}: the results went back upstream as text")


def chat_tool_choice(url):
    client = openai_client(url)
    messages = [{"role": "user", "content": question("text")}]
    raw = client.chat.completions.with_raw_response.create(
        model="replay", messages=messages, tools=CHAT_TOOLS, tool_choice="required"
    )
    reply = raw.parse()
    check(raw.headers.get("x-tool-calling-diagnostic"), "a diagnostic header")
    check(reply.choices[0].message.tool_calls is None, "no call was made")
    named = client.chat.completions.create(
        model="replay",
        messages=[{"role": "user", "content": question("hermes_parallel")}],
        tools=CHAT_TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    names = [c.function.name for c in named.choices[0].message.tool_calls]
    check(names == ["get_weather"], f"only the named tool is a call: {names}")
    one = client.chat.completions.create(
        model="replay", messages=[{"role": "user", "content": question("hermes_parallel")}],
        tools=CHAT_TOOLS, parallel_tool_calls=False,
    )
    check(len(one.choices[0].message.tool_calls) == 1, "one call without parallel calls")
    none = client.chat.completions.create(
        model="replay", messages=[{"role": "user", "content": question("text")}], tools=CHAT_TOOLS, tool_choice="none"
    )
    check(none.choices[0].message.content == "Hello! Nothing to call here.", "text")
    ok("chat: tool_choice required, named, none, and parallel_tool_calls false")


# ---------------------------------------------------------------------------------------
# Responses


def responses(protocol, url, scenario):
    client = openai_client(url)
    response = client.responses.create(model="replay", input=question(scenario), tools=RESPONSES_TOOLS)
    calls = [item for item in response.output if item.type == "function_call"]
    got = [(c.name, json.loads(c.arguments)) for c in calls]
    check(got == EXPECTED, f"{protocol}: {got}")
    check(response.status == "completed", f"{protocol}: {response.status}")
    ok(f"responses {protocol}: two function_call items")

    done = []
    completed = None
    with client.responses.create(model="replay", input=question(scenario), tools=RESPONSES_TOOLS, stream=True) as stream:
        for event in stream:
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                done.append((event.item.name, json.loads(event.item.arguments)))
            if event.type == "response.completed":
                completed = event.response
    check(done == EXPECTED, f"{protocol} streamed: {done}")
    check(completed is not None and completed.status == "completed", f"{protocol}: completed {completed}")
    ok(f"responses {protocol}: two function calls streamed")

    history = [{"role": "user", "content": question(scenario)}]
    for call in calls:
        history.append({"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments})
    for call in calls:
        history.append({"type": "function_call_output", "call_id": call.call_id, "output": RESULTS[call.name]})
    second = client.responses.create(model="replay", input=history, tools=RESPONSES_TOOLS)
    check(second.output_text == ROUND_TWO, f"{protocol}: {second.output_text}")
    ok(f"responses {protocol}: the outputs went back upstream as text")


# ---------------------------------------------------------------------------------------
# Anthropic Messages


def messages(protocol, url, scenario):
    client = anthropic_client(url)
    asked = [{"role": "user", "content": question(scenario)}]
    message = client.messages.create(model="replay", max_tokens=256, tools=ANTHROPIC_TOOLS, messages=asked)
    uses = [block for block in message.content if block.type == "tool_use"]
    check([(u.name, u.input) for u in uses] == EXPECTED, f"{protocol}: {message.content}")
    check(message.stop_reason == "tool_use", f"{protocol}: {message.stop_reason}")
    ok(f"messages {protocol}: two tool_use blocks")

    with client.messages.stream(model="replay", max_tokens=256, tools=ANTHROPIC_TOOLS, messages=asked) as stream:
        final = stream.get_final_message()
    streamed = [(b.name, b.input) for b in final.content if b.type == "tool_use"]
    check(streamed == EXPECTED, f"{protocol} streamed: {final.content}")
    check(final.stop_reason == "tool_use", f"{protocol} streamed: {final.stop_reason}")
    ok(f"messages {protocol}: two tool_use blocks streamed")

    history = asked + [
        {"role": "assistant", "content": [b.model_dump() for b in message.content if b.type in ("text", "tool_use")]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u.id, "content": RESULTS[u.name]} for u in uses
        ]},
    ]
    second = client.messages.create(model="replay", max_tokens=256, tools=ANTHROPIC_TOOLS, messages=history)
    text = "".join(b.text for b in second.content if b.type == "text")
    check(text == ROUND_TWO, f"{protocol}: {text}")
    check(second.stop_reason == "end_turn", f"{protocol}: {second.stop_reason}")
    ok(f"messages {protocol}: the results went back upstream as text")


# ---------------------------------------------------------------------------------------
# Faults: errors the clients raise as their own exceptions, never a hang.


def faults():
    client = openai_client(QUICK)
    asked = lambda scenario: [{"role": "user", "content": question(scenario)}]
    for scenario, status in [("fault_500", 500), ("fault_429", 429), ("fault_hang", 504), ("fault_cut", 502)]:
        try:
            client.chat.completions.create(model="replay", messages=asked(scenario), tools=CHAT_TOOLS)
        except openai.APIStatusError as error:
            check(error.status_code == status, f"{scenario}: {error.status_code}")
        else:
            raise AssertionError(f"{scenario}: no error")
    try:
        for _ in client.chat.completions.create(model="replay", messages=asked("fault_slow"), tools=CHAT_TOOLS, stream=True):
            pass
    except openai.APIError as error:
        check("did not finish" in str(error), f"streamed timeout: {error}")
    else:
        raise AssertionError("fault_slow streamed: no error")
    ok("chat: upstream faults raise the client's errors")

    claude = anthropic_client(QUICK)
    try:
        claude.messages.create(model="replay", max_tokens=64, messages=asked("fault_500"))
    except anthropic.APIStatusError as error:
        check(error.status_code == 500, f"anthropic: {error.status_code}")
    else:
        raise AssertionError("anthropic fault_500: no error")
    try:
        openai_client(QUICK).responses.create(model="replay", input=question("fault_hang"))
    except openai.APIStatusError as error:
        check(error.status_code == 504, f"responses: {error.status_code}")
    else:
        raise AssertionError("responses fault_hang: no error")
    ok("messages and responses: upstream faults raise the client's errors")


def main():
    for protocol, scenario in SCENARIOS.items():
        url = GATEWAYS[protocol]
        chat(protocol, url, scenario)
        responses(protocol, url, scenario)
        messages(protocol, url, scenario)
    chat_tool_choice(GATEWAYS["hermes"])
    faults()
    print(f"all checks passed (openai {openai.__version__}, anthropic {anthropic.__version__})")


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - the test reports any failure
        print(f"FAILED: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        raise
