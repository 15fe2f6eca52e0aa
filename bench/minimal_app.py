"""The baseline: the smallest FastAPI app behind uvicorn (one trivial POST endpoint)."""

from fastapi import FastAPI, Request

app = FastAPI()


@app.post("/echo")
async def echo(request: Request):
    await request.body()
    return {"ok": True}
