#!/usr/bin/env python3
"""A support agent on PydanticAI, its tools from MCP.

PydanticAI runs its own tool loop. The agent reads what any deployment would give it:
the model endpoint and key from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (PydanticAI's
OpenAI provider reads both), the model from ``OPENAI_MODEL``, and its tools from the MCP
server at ``EVALCASE_MCP_URL`` (an ``MCPToolset``). Each stdin line is a user turn (the
system prompt and the conversation so far); it answers each with one line,
``{"role": "assistant", "content": ...}``. ``--stream`` runs the agent streamed.

    [run.agents.support_pydantic_ai]
    spec = "cmd:{python} examples/support_pydantic_ai/agent.py"
    loop = "agent"
    upstream = { base_url = "http://127.0.0.1:8000/v1", api_key_env = "UPSTREAM_KEY" }
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


async def main() -> None:
    model = OpenAIChatModel(
        os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), provider=OpenAIProvider()
    )
    tools = MCPToolset(os.environ["EVALCASE_MCP_URL"])
    agent = Agent(model, toolsets=[tools], model_settings={"temperature": 0})
    async with agent:
        while line := await asyncio.to_thread(sys.stdin.readline):
            request = json.loads(line)
            messages = request["messages"]
            system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
            turns = [m for m in messages if m["role"] in ("user", "assistant")]
            history = [
                ModelRequest(parts=[UserPromptPart(m["content"])])
                if m["role"] == "user"
                else ModelResponse(parts=[TextPart(m["content"] or "")])
                for m in turns[:-1]
            ]
            prompt = turns[-1]["content"]
            if "--stream" in sys.argv:
                async with agent.run_stream(
                    prompt, message_history=history, instructions=system
                ) as run:
                    answer = await run.get_output()
            else:
                answer = (
                    await agent.run(prompt, message_history=history, instructions=system)
                ).output
            print(json.dumps({"role": "assistant", "content": str(answer)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
