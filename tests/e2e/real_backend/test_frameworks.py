"""The agent frameworks people use, through shieldgate in front of a real llama.cpp server.

openai-agents (an Agent with a function tool, on both of its OpenAI models, run and streamed)
and LangChain's ``ChatOpenAI`` (invoke, stream, ``bind_tools``) must work through the proxy
exactly as they do directly; where a framework cannot talk to llama.cpp directly (the Responses
API, which llama.cpp does not serve) the proxy is the only way and the run must complete.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.exceptions import ModelRefusalError
from agents.models.interface import Model
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_openai import ChatOpenAI

from proxy.demo.llama_server import LlamaServer
from proxy.serving.server import RunningServer

Guarded = Callable[..., Awaitable[RunningServer]]

QUESTION = "What is the weather in Paris?"
BLOCKING_POLICY = """
version: 1
name: real-frameworks
refusal: {message: "Blocked by the framework test policy."}
input:
  - {id: weapons, type: denylist, phrases: ["build a bomb"], action: block}
"""


@pytest.fixture(autouse=True)
def no_tracing() -> Iterator[None]:
    # The agents SDK would otherwise export traces to OpenAI's servers.
    set_tracing_disabled(True)
    yield


def client_for(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-local", max_retries=0, timeout=120)


WEATHER = "Sunny, 21 degrees."


def weather_agent(model: Model, calls: list[str], *, stop_at_tool: bool = False) -> Agent[None]:
    """An agent forced to call ``get_weather`` once (the SDK resets ``tool_choice`` after the
    call: forcing is how a 135M model is made to call a tool at all), then answering in text,
    or, with ``stop_at_tool``, ending with the tool's result."""

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        calls.append(city)
        return WEATHER

    settings = ModelSettings(tool_choice="get_weather", temperature=0, max_tokens=48)
    behavior: Any = "stop_on_first_tool" if stop_at_tool else "run_llm_again"
    return Agent(
        name="weather",
        tools=[get_weather],
        model=model,
        model_settings=settings,
        tool_use_behavior=behavior,
    )


def agents_model(kind: str, client: openai.AsyncOpenAI, model: str) -> Model:
    if kind == "responses":
        return OpenAIResponsesModel(model=model, openai_client=client)
    return OpenAIChatCompletionsModel(model=model, openai_client=client)


async def run_agent(agent: Agent[None], streamed: bool, text: str = QUESTION) -> Any:
    if not streamed:
        return (await Runner.run(agent, text, max_turns=4)).final_output
    result = Runner.run_streamed(agent, text, max_turns=4)
    async for _ in result.stream_events():
        pass
    return result.final_output


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_responses_agent_calls_its_tool_and_answers_through_the_proxy(
    llama: LlamaServer, guarded: Guarded, streamed: bool
) -> None:
    """The whole loop: tool call, tool result sent back, a text answer. llama.cpp serves no
    Responses API: through shieldgate is the only way this agent runs on it."""
    proxy = await guarded()
    calls: list[str] = []
    async with client_for(f"{proxy.url}/v1") as via:
        agent = weather_agent(agents_model("responses", via, llama.model), calls)
        output = await run_agent(agent, streamed)
    assert len(calls) == 1
    assert isinstance(output, str)
    assert output


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_chat_agent_calls_its_tool_the_same_direct_and_through_the_proxy(
    llama: LlamaServer, guarded: Guarded, streamed: bool
) -> None:
    """The chat model sends the tool result back in an assistant turn with ``content: null``,
    which llama.cpp rejects (500) directly as through the proxy — the proxy forwards the
    client's bytes as they came — so this run ends at the tool's result."""
    proxy = await guarded()
    runs = []
    for base_url in (llama.base_url, f"{proxy.url}/v1"):
        calls: list[str] = []
        async with client_for(base_url) as client:
            model = agents_model("chat", client, llama.model)
            output = await run_agent(weather_agent(model, calls, stop_at_tool=True), streamed)
        runs.append((calls, output))
    assert runs[0] == runs[1]
    assert runs[1][1] == WEATHER
    assert len(runs[1][0]) == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("kind", ["responses", "chat"])
async def test_agent_sees_an_input_block_as_its_model_reports_it(
    llama: LlamaServer, guarded: Guarded, kind: str, streamed: bool
) -> None:
    """A refusal surfaces as each model reports one: the Responses model raises the SDK's
    refusal error with the policy's message, the chat model returns the message as its text."""
    proxy = await guarded(BLOCKING_POLICY)
    calls: list[str] = []
    async with client_for(f"{proxy.url}/v1") as via:
        agent = weather_agent(agents_model(kind, via, llama.model), calls)
        if kind == "responses":
            with pytest.raises(ModelRefusalError, match="Blocked by the framework test policy"):
                await run_agent(agent, streamed, text="how do I build a bomb")
        else:
            output = await run_agent(agent, streamed, text="how do I build a bomb")
            assert output == "Blocked by the framework test policy."
    assert calls == []


@pytest.fixture
async def chat_model() -> AsyncIterator[Callable[[str, str], ChatOpenAI]]:
    """Factory for LangChain's ``ChatOpenAI``, each on an HTTP client of this test's event loop
    (langchain-openai otherwise shares one cached client across event loops)."""
    clients: list[httpx.AsyncClient] = []

    def factory(base_url: str, model: str) -> ChatOpenAI:
        clients.append(httpx.AsyncClient(timeout=120))
        return ChatOpenAI(
            base_url=base_url, api_key="sk-local", model=model, temperature=0, max_tokens=32,
            max_retries=0, http_async_client=clients[-1],
        )  # fmt: skip

    yield factory
    for client in clients:
        await client.aclose()


async def test_langchain_invoke_and_stream_are_the_same_direct_and_through_the_proxy(
    llama: LlamaServer, guarded: Guarded, chat_model: Callable[[str, str], ChatOpenAI]
) -> None:
    proxy = await guarded()
    direct = chat_model(llama.base_url, llama.model)
    via = chat_model(f"{proxy.url}/v1", llama.model)
    prompt = "Say hello to Ada in one short sentence."
    expected = await direct.ainvoke(prompt)
    got = await via.ainvoke(prompt)
    assert isinstance(got, AIMessage)
    assert got.content == expected.content != ""
    streamed = [chunk async for chunk in via.astream(prompt)]
    assert all(isinstance(chunk, AIMessageChunk) for chunk in streamed)
    assert "".join(str(chunk.content) for chunk in streamed) == expected.content


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
async def test_langchain_bind_tools_through_the_proxy(
    llama: LlamaServer,
    guarded: Guarded,
    chat_model: Callable[[str, str], ChatOpenAI],
    stream: bool,
) -> None:
    """Tool calls the same directly and through the proxy. Streamed, LangChain joins the tool
    name llama.cpp repeats in every delta (``get_weatherget_weather...``) — directly too: the
    proxy relays the stream's bytes as they came."""
    proxy = await guarded()

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return "Sunny"

    async def tool_calls(model: ChatOpenAI) -> list[tuple[str, dict[str, Any]]]:
        bound = model.bind_tools([get_weather], tool_choice="get_weather")
        if stream:
            gathered: AIMessageChunk | None = None
            async for chunk in bound.astream(QUESTION):
                assert isinstance(chunk, AIMessageChunk)
                gathered = chunk if gathered is None else gathered + chunk
            assert gathered is not None
            message: AIMessage = gathered
        else:
            reply = await bound.ainvoke(QUESTION)
            assert isinstance(reply, AIMessage)
            message = reply
        return [(call["name"], call["args"]) for call in message.tool_calls]

    expected = await tool_calls(chat_model(llama.base_url, llama.model))
    got = await tool_calls(chat_model(f"{proxy.url}/v1", llama.model))
    assert len(expected) == 1
    assert expected[0][0].startswith("get_weather")
    assert "city" in expected[0][1]
    assert got == expected
