"""A LangGraph store kept in a Mini-Sphere workspace: put, get, search by words and by a
filter, list namespaces, delete. No LLM involved.

    python docs/examples/langgraph_example.py      # MINISPHERE_URL/_WORKSPACE/_TOKEN set
"""

from __future__ import annotations

from minisphere.integrations.langgraph import MinisphereStore


def main(ws) -> dict:
    store = MinisphereStore(ws)
    store.put(("users", "alice"), "food", {"likes": "sushi and green tea", "spicy": 1})
    store.put(("users", "alice"), "travel", {"likes": "trains over planes", "spicy": 0})
    store.put(("users", "bob"), "food", {"likes": "ramen", "spicy": 3})
    store.put(("users", "alice"), "food", {"likes": "sushi, green tea, mochi", "spicy": 1})

    found = store.search(("users",), query="green tea")  # recall, within users/*
    hot = store.search(("users",), filter={"spicy": {"$gte": 2}})
    print([(item.namespace, item.key, item.score) for item in found])
    namespaces = store.list_namespaces(prefix=("users",))
    store.delete(("users", "bob"), "food")
    return {
        "alice_food": store.get(("users", "alice"), "food").value,
        "found": found,
        "hot": [item.value for item in hot],
        "namespaces": namespaces,
        "after_delete": store.list_namespaces(prefix=("users",)),
    }


if __name__ == "__main__":
    from _connect import workspace_from_env

    print(main(workspace_from_env()))
