"""Compare two traces (``tracetui diff``) and check one against written expectations
(``tracetui check``). UI-free data modules (``diff_data``, ``expectations``, ``check``; the
aligned trees: ``alignment`` → ``match_keys`` → ``pair_tree``) under rich reports (``diff_report``,
``check_report``); the click commands are :mod:`tracetui.commands`'s."""
