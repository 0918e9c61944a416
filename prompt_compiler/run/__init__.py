"""Running a suite: the settings of a run, its pairs, and the engines that compile them.

* :mod:`.settings`: :class:`~.settings.CompileSettings`, the one carrier of run options;
* :mod:`.suite`: a loaded suite (:func:`~.suite.load`) and the run around the engines
  (:func:`~.suite.compile_to_dir`: OUT as one unit, the formats, the manifest);
* :mod:`.pairs`: one dataset x model pair compiled to records or lines, the same in every process;
* :mod:`.engines`: where the pairs are compiled (this process, a process pool, Ray).
"""
