#pragma once
// `moe-conform check`: result files judged as if their implementation had run here. The files
// are matched to golden cases by case name and checked against the golden file's SHA-256 first;
// every fault that makes a file unusable (wrong case hash, wrong shape, no precision, a case not
// in the run, a file that cannot be read) is collected before anything is compared. The replay
// is then an ordinary backend for the runner, so statuses, metrics and reports are those of
// `moe-conform run`.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"

namespace moe::conformance {

struct CheckInputs {
    std::vector<std::string> golden_files;  // the cases of the run
    std::vector<std::string> result_files;  // .h5 result files, or one .npy (with one golden file)
    // --precision: overrides or supplies the files' own, given the case's data type ("data" in
    // --precision stands for it); empty: the files' own.
    std::function<Precision(DType data)> precision;
    std::string name;                       // --name: the implementation's name in reports
    std::uint64_t max_memory = 0;
    // Results of cases outside golden_files are passed over, not "extra results" (exit 2): for
    // `check --case FILE --results FOLDER`, where the folder answers a whole suite.
    bool others_ignored = false;
    // For an extra result's "did you mean": the case name among `names` closest to `wanted` when
    // it is close enough to be a typo (moe-conform passes shrink::closest_name, which this library
    // cannot link: moe_shrink links it). Unset: only a file name for a case name is recognised.
    std::function<std::optional<std::string>(const std::string& wanted, const std::vector<std::string>& names)>
        closest_case;
};

struct PreparedCheck {
    // The replayed implementation, made where the cases run (worker processes); empty when
    // `problems` is not.
    BackendMaker replay;
    std::vector<std::string> problems;  // one line per unusable result file (exit 2)
    struct Answer {
        std::string file;   // the result file that answers the case
        DType output_type;  // the type its output is stored in
    };
    std::map<std::string, Answer> answers;  // by case name, as stored
};

// Reads every file (golden files in full, with every check of read_golden; result files with
// every check of read_result) here, in this process.
PreparedCheck prepare_check(const CheckInputs& in);

// What prepare_check needs of each file, as text: each golden file read in full (every check of
// read_golden; the hidden states' type and shape, the stage layout, validate()'s verdict, or what
// the read threw) and each result file too (its attributes and shapes, or what it threw), without
// their data. `moe-conform check` makes them in a child process, where a file that crashes or
// hangs HDF5 cannot take the tool down, so that its own process never reads a golden file's data
// and reads each result (in full again) only when its case is compared (the replay's prepare()),
// one at a time.
std::string summarize_golden_files(const std::vector<std::string>& files);
std::string summarize_result_files(const std::vector<std::string>& files, const CheckInputs& in);
// prepare_check from the summaries of in.golden_files and in.result_files; of the files, reads
// only each golden file's identity (its case name, and its bytes for the hash).
PreparedCheck prepare_check(const CheckInputs& in, const std::string& golden_summaries,
                            const std::string& result_summaries);

// Every .h5 and .npy file in `dir` and its subfolders (a CI's shard artifacts, each in its own),
// sorted; throws InputError when there is none.
std::vector<std::string> result_files_in(const std::string& dir);

}  // namespace moe::conformance
