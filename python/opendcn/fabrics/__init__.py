"""The building blocks architectures are made of: circuits and schedules
(:mod:`.topology`), routes and their compilation to time-flow tables (:mod:`.routing`),
the virtual channels of lossless networks (:mod:`.channels`), Duo's de Bruijn backbone and
DA-link control (:mod:`.debruijn`, :mod:`.distda`) and the wiring, controllers and tables of
the HPC designs (:mod:`.hpc`).

A fabric module imports no architecture (:mod:`opendcn.arch` builds on these, never the
other way round).
"""
