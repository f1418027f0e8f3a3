#!/usr/bin/env python3
"""tools/perf-report without running a benchmark: the build commands it runs, how run names pair
into rows, and the speed targets checked against a synthetic run."""

import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, "tools", "perf-report")
sys.path.insert(0, os.path.join(ROOT, "tools"))
LOADER = importlib.machinery.SourceFileLoader("perf_report", PATH)
SPEC = importlib.util.spec_from_loader("perf_report", LOADER)
report = importlib.util.module_from_spec(SPEC)
LOADER.exec_module(report)
from perf_report_rows import WAITQUEUE_FORMS  # noqa: E402


def Run(name, itemsPerSecond):
    """One repetition of one benchmark, as Google Benchmark's JSON gives it."""
    return {"name": name, "run_name": name, "run_type": "iteration", "real_time": 1.0,
            "cpu_time": 1.0, "time_unit": "ns", "items_per_second": itemsPerSecond}


class BuildCommands(unittest.TestCase):
    def Commands(self, *compilers):
        ran = []
        saved = report.Run
        report.Run = lambda command, **kwargs: ran.append(command)
        try:
            with tempfile.TemporaryDirectory() as build:
                report.Build(build, 2, "", *compilers)
        finally:
            report.Run = saved
        return ran

    def test_release_build_without_a_compiler_pair(self):
        configure, build = self.Commands()
        self.assertEqual(configure[:3], ["cmake", "-S", report.ROOT])
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", configure)
        self.assertIn("-DTC_BUILD_BENCHMARKS=ON", configure)
        self.assertFalse([a for a in configure if a.startswith("-DCMAKE_CXX_COMPILER")])
        self.assertEqual(build[:2], ["cmake", "--build"])
        self.assertIn("tc_bench", build)

    def test_a_compiler_pair_is_passed_on(self):
        configure, _ = self.Commands(("clang-19", "clang++-19"))
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", configure)
        self.assertIn("-DCMAKE_C_COMPILER=clang-19", configure)
        self.assertIn("-DCMAKE_CXX_COMPILER=clang++-19", configure)


class Rows(unittest.TestCase):
    def Rows(self, runs):
        rows, failed, _, _ = report.Summarise({"benchmarks": runs})
        self.assertEqual(failed, [])
        return {row["workload"]: row for row in rows}

    def test_peer_rows_pair_with_ours(self):
        rows = self.Rows([Run("BM_ScalingSkynet_TC/workers:2/real_time", 1e8),
                          Run("BM_ScalingSkynet_TMC/workers:2/real_time", 2e8),
                          Run("BM_MutexContended/real_time", 3e7),
                          Run("BM_MutexContended_TMC/real_time", 1.5e7)])
        self.assertAlmostEqual(rows["ScalingSkynet/2"]["ratios"]["TMC"], 0.5)
        self.assertAlmostEqual(rows["MutexContended"]["ratios"]["TMC"], 2.0)

    def WaitQueueFormsTarget(self, libraryPerSecond):
        runs = []
        for library, form in WAITQUEUE_FORMS:
            runs.append(Run("BM_%s/real_time" % library, libraryPerSecond))
            runs.append(Run("BM_%s/real_time" % form, 1e7))
        rows, floors = report.SplitFloors(list(self.Rows(runs).values()))
        targets = report.CheckTargets(rows, floors)
        [target] = [t for t in targets if "WaitQueue forms" in t["target"]]
        return target

    def test_library_primitives_against_their_waitqueue_forms(self):
        self.assertTrue(self.WaitQueueFormsTarget(2e7)["met"])
        self.assertFalse(self.WaitQueueFormsTarget(0.5e7)["met"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])
