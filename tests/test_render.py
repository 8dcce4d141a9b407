from datasette_okf.render import CUT_MARK, cut_block, estimate_tokens


def test_a_cut_block_ends_at_a_line_or_sentence_within_its_tokens_and_says_it_was_cut():
    block = "#### Overview\nThe seal fails on 9 Dawnmarch. The Order of Silent Echos is blamed.\n" + "More. " * 200
    cut = cut_block(block, 30)
    assert estimate_tokens(cut) <= 30 and cut.endswith(CUT_MARK)
    assert cut.startswith("#### Overview\nThe seal fails on 9 Dawnmarch.")
    assert cut_block("Short enough.", 30) == "Short enough."  # nothing to cut: no mark


def test_a_block_without_a_line_or_sentence_end_is_cut_at_a_word():
    cut = cut_block("word " * 100, 20)
    assert estimate_tokens(cut) <= 20 and cut == "word " * ((20 * 4 - len(CUT_MARK)) // 5 - 1) + "word" + CUT_MARK
