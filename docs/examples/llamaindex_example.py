"""LlamaIndex's Memory with a Mini-Sphere memory block and LlamaIndex's own MockLLM: older
turns leave the short-term history for the workspace and come back when a later question
touches them. No LLM, no network.

    python docs/examples/llamaindex_example.py     # MINISPHERE_URL/_WORKSPACE/_TOKEN set
"""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory

from minisphere.integrations.llamaindex import MinisphereMemoryBlock

# a tiny short-term budget, so the example flushes turns into the workspace after a few lines
TOKEN_LIMIT = 40


def main(ws) -> dict:
    memory = Memory.from_defaults(
        session_id="example",
        token_limit=TOKEN_LIMIT,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
        memory_blocks=[MinisphereMemoryBlock(workspace=ws)],
    )
    llm = MockLLM()
    for user_text in [
        "My cat is called Pixel and she likes tuna",
        "I also own a bicycle named Rocket",
        "What does my cat like to eat?",
    ]:
        memory.put(ChatMessage(role="user", content=user_text))
        messages = memory.get()  # system message with recalled entries
        reply = llm.chat(messages)
        memory.put(ChatMessage(role="assistant", content="Noted."))
    print(messages[0].content)
    return {"messages": messages, "reply": reply}


if __name__ == "__main__":
    from _connect import workspace_from_env

    main(workspace_from_env())
