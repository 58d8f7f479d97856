"""The three examples of the specification page (../shared/spec/compose_soul.md), verbatim."""
# ruff: noqa: PLC0415, N806  (the examples are kept verbatim, imports and all)


def test_example_1_smallest_useful_call() -> None:
    import os
    import tempfile

    from toolnexus.agents import compose_soul

    with tempfile.TemporaryDirectory() as home:
        with open(os.path.join(home, "SOUL.md"), "w", encoding="utf-8") as f:
            f.write("You are Aster, a calm and precise research assistant.")

        soul, found = compose_soul(home)

        assert found == ["SOUL.md"]
        assert soul == "## SOUL.md\n\nYou are Aster, a calm and precise research assistant."

        print("ok:", found, "|", len(soul), "chars")


def test_example_2_discovery_order_wins() -> None:
    import os
    import tempfile

    from toolnexus.agents import compose_soul

    with tempfile.TemporaryDirectory() as home:
        # Write MEMORY.md first on disk — BOOTSTRAP_ORDER still wins over write order.
        with open(os.path.join(home, "MEMORY.md"), "w", encoding="utf-8") as f:
            f.write("- prefers metric units\n- last project: rag_go")
        with open(os.path.join(home, "AGENTS.md"), "w", encoding="utf-8") as f:
            f.write("Always cite your sources.")
        with open(os.path.join(home, "SOUL.md"), "w", encoding="utf-8") as f:
            f.write("You are Aster.")

        soul, found = compose_soul(home)

        assert found == ["AGENTS.md", "SOUL.md", "MEMORY.md"]  # bootstrap order, not write order
        assert soul.index("## AGENTS.md") < soul.index("## SOUL.md") < soul.index("## MEMORY.md")
        assert "prefers metric units" in soul
        # IDENTITY.md / USER.md / TOOLS.md / HEARTBEAT.md were never written — no sections, no error.
        assert "## IDENTITY.md" not in soul

        print("ok:", found)


def test_example_3_byte_cap_truncates_never_errors() -> None:
    import os
    import tempfile

    from toolnexus.agents import compose_soul

    CAP = 2 * 1024 * 1024  # MAX_BOOTSTRAP_FILE_BYTES

    with tempfile.TemporaryDirectory() as home:
        oversized_path = os.path.join(home, "AGENTS.md")
        with open(oversized_path, "wb") as f:
            f.write(b"x" * (CAP + 1024))  # 1 KB over the cap

        with open(os.path.join(home, "SOUL.md"), "w", encoding="utf-8") as f:
            f.write("You are Aster.")

        soul, found = compose_soul(home)

        assert found == ["AGENTS.md", "SOUL.md"]
        assert "[truncated: exceeds 2 MB bootstrap cap]" in soul
        # The on-disk file is untouched — still oversized.
        assert os.path.getsize(oversized_path) == CAP + 1024

        print("ok: truncated at", CAP, "bytes; found", found)
