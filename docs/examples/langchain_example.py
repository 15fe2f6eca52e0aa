"""LangChain over a Mini-Sphere workspace, no LLM needed: a scripted chat model (LangChain's
own GenericFakeChatModel) asks for two tool calls, the tools run against the workspace, and a
retriever feeds recalled entries into a prompt.

    python docs/examples/langchain_example.py      # MINISPHERE_URL/_WORKSPACE/_TOKEN set
"""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from minisphere.integrations.langchain import MinisphereRetriever, minisphere_tools


def main(ws) -> dict:
    tools = {tool.name: tool for tool in minisphere_tools(ws, handle_tool_error=True)}
    # what a real model would answer: first two tool calls, then a reply
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {
                            "name": "capture",
                            "id": "call-1",
                            "args": {
                                "content": "We chose SQLite per workspace for isolation",
                                "tags": ["design"],
                                "kind": "episodic",
                                "claimTag": "VERIFIED",
                            },
                        },
                        {
                            "name": "recall",
                            "id": "call-2",
                            "args": {"query": "why sqlite", "topK": 3},
                        },
                    ],
                ),
                AIMessage(content="You chose SQLite per workspace for isolation."),
            ]
        )
    )
    history = [HumanMessage("Remember that we chose SQLite per workspace, then recall why.")]
    reply = model.invoke(history)
    history.append(reply)
    for tool_call in reply.tool_calls:
        history.append(tools[tool_call["name"]].invoke(tool_call))  # a ToolMessage
    history.append(model.invoke(history))

    retriever = MinisphereRetriever(workspace=ws, top_k=3, tag="design")
    documents = retriever.invoke("sqlite isolation")
    context = "\n".join(f"[{d.metadata['claim_tag']}] {d.page_content}" for d in documents)
    print(context)
    print(history[-1].content)
    return {
        "tool_messages": [m for m in history if isinstance(m, ToolMessage)],
        "documents": documents,
        "answer": history[-1].content,
    }


if __name__ == "__main__":
    from _connect import workspace_from_env

    main(workspace_from_env())
