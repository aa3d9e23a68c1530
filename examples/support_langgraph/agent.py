#!/usr/bin/env python3
"""A support agent on LangGraph (a prebuilt ReAct graph), its tools from MCP.

LangGraph runs its own tool loop. The agent reads what any deployment would give it: the
model endpoint and key from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (read by the
OpenAI client under ``langchain-openai``), the model from ``OPENAI_MODEL``, and its tools
from the MCP server at ``EVALCASE_MCP_URL`` (``langchain-mcp-adapters``). Each stdin line
is a user turn (the system prompt and the conversation so far); it answers each with one
line, ``{"role": "assistant", "content": ...}``. ``--stream`` streams the model's tokens.

    [run.agents.support_langgraph]
    spec = "cmd:{python} examples/support_langgraph/agent.py"
    loop = "agent"
    upstream = { base_url = "http://127.0.0.1:8000/v1", api_key_env = "UPSTREAM_KEY" }
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


async def main() -> None:
    client = MultiServerMCPClient(
        {"shop": {"url": os.environ["EVALCASE_MCP_URL"], "transport": "streamable_http"}}
    )
    async with client.session("shop") as session:
        from langchain_mcp_adapters.tools import load_mcp_tools

        tools = await load_mcp_tools(session)
        model = ChatOpenAI(
            model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
            temperature=0,
            streaming="--stream" in sys.argv,
        )
        while line := await asyncio.to_thread(sys.stdin.readline):
            request = json.loads(line)
            messages = request["messages"]
            system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
            turns = [
                (m["role"], m["content"]) for m in messages if m["role"] in ("user", "assistant")
            ]
            graph = create_react_agent(model, tools, prompt=system)
            result = await graph.ainvoke({"messages": turns}, {"recursion_limit": 25})
            answer = result["messages"][-1].content
            print(json.dumps({"role": "assistant", "content": str(answer)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
