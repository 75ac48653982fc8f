"""The official `openai` Python client against the tool-calling gateway, in front of a
real model (SmolLM2-135M-Instruct in llama.cpp's server), with the protocol's grammar.

Run by tests/real_model.rs, which starts the server and one gateway per protocol (each
constraining decoding with GBNF) and passes their addresses in the environment:

- GATEWAYS: a JSON object, protocol id -> the gateway's base URL (`http://…/v1`).

For each protocol, `tool_choice: "required"` must get tool calls whose arguments are
JSON that fits the tool's schema (a `maxLength`, an `enum`, a nested object with an
integer range), whole and streamed; with `parallel_tool_calls: false`, exactly one.
Each check prints one line; the first failed assertion ends the script with an error.
"""

import json
import os

import openai

GATEWAYS = json.loads(os.environ["GATEWAYS"])

FORECAST = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40, "description": "the city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "window": {
            "type": "object",
            "properties": {
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "hourly": {"type": "boolean"},
            },
            "required": ["days"],
        },
    },
    "required": ["city", "unit", "window"],
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "forecast", "description": "The weather forecast for a city.", "parameters": FORECAST},
    }
]
QUESTION = "What will the weather be in Paris over the next three days, in celsius?"


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def fits(arguments):
    """Whether the arguments' JSON text fits FORECAST; the reason when it does not."""
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as error:
        return f"not JSON: {error}: {arguments!r}"
    if not isinstance(args, dict):
        return f"not an object: {arguments!r}"
    extra = set(args) - set(FORECAST["properties"])
    if extra:
        return f"unknown keys {extra}"
    for key in FORECAST["required"]:
        if key not in args:
            return f"`{key}` is missing"
    if not isinstance(args["city"], str) or len(args["city"]) > 40:
        return f"`city` is no string of at most 40 characters: {args['city']!r}"
    if args["unit"] not in ("celsius", "fahrenheit"):
        return f"`unit` is outside the enum: {args['unit']!r}"
    window = args["window"]
    if not isinstance(window, dict) or set(window) - {"days", "hourly"}:
        return f"`window` is no object of days and hourly: {window!r}"
    days = window.get("days")
    if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= 7:
        return f"`window.days` is no integer from 1 to 7: {days!r}"
    if "hourly" in window and not isinstance(window["hourly"], bool):
        return f"`window.hourly` is no boolean: {window['hourly']!r}"
    return None


def whole(client, **extra):
    reply = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": QUESTION}],
        tools=TOOLS,
        tool_choice="required",
        temperature=0,
        max_tokens=200,
        **extra,
    )
    choice = reply.choices[0]
    calls = choice.message.tool_calls or []
    return choice.finish_reason, [(c.function.name, c.function.arguments) for c in calls], choice.message.content


def streamed(client, **extra):
    stream = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": QUESTION}],
        tools=TOOLS,
        tool_choice="required",
        temperature=0,
        max_tokens=200,
        stream=True,
        **extra,
    )
    calls, finish, content = {}, None, ""
    for chunk in stream:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        content += delta.content or ""
        for call in delta.tool_calls or []:
            name, arguments = calls.get(call.index, ("", ""))
            if call.function is not None:
                name += call.function.name or ""
                arguments += call.function.arguments or ""
            calls[call.index] = (name, arguments)
        finish = choice.finish_reason or finish
    return finish, [calls[i] for i in sorted(calls)], content


def main():
    for protocol, url in GATEWAYS.items():
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, timeout=300)
        for how, ask in (("whole", whole), ("streamed", streamed)):
            finish, calls, content = ask(client)
            check(finish == "tool_calls", f"{protocol} {how}: finish_reason {finish!r} (content {content!r})")
            check(calls, f"{protocol} {how}: no tool call (content {content!r})")
            for name, arguments in calls:
                check(name == "forecast", f"{protocol} {how}: a call of {name!r}")
                problem = fits(arguments)
                check(problem is None, f"{protocol} {how}: {problem}")
            print(f"ok: {protocol} {how}: {calls}", flush=True)
        finish, calls, content = whole(client, parallel_tool_calls=False)
        check(len(calls) == 1, f"{protocol}: parallel_tool_calls false gave {len(calls)} calls ({content!r})")
        check(fits(calls[0][1]) is None, f"{protocol}: {fits(calls[0][1])}")
        print(f"ok: {protocol} one call: {calls}", flush=True)
    print("all checks passed")


if __name__ == "__main__":
    main()
