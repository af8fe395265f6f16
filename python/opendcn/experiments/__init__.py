"""What happens after a run: statistics over its records (:mod:`.analysis`), sweeps of
many runs into one results tree (:mod:`.sweeps`), the database that reads such a tree in
place (:mod:`.db`), the HTML reports of runs and sweeps (:mod:`.report`,
:mod:`.sweep_report`) and the plotting helper they and the studies draw with
(:mod:`.plots`).

(Not named ``results``: ``od.results(DIR)`` is the database's entry point.)
"""
