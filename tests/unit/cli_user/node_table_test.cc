#include "node_table.h"

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace phalanx::cli {
namespace {

using ::testing::HasSubstr;

constexpr const char* kNodes = R"pb(
  nodes {
    name: "dgx01"
    state: NODE_STATE_UP
    gpus: 8
    gpus_free: 0
    model: "dgx-h100"
    leaf: "su0"
    agent_connected: true
    jobs: 41
  }
  nodes {
    name: "dgx02"
    state: NODE_STATE_UP
    gpus: 8
    gpus_free: 0
    model: "dgx-h100"
    leaf: "su0"
    agent_connected: true
    jobs: 41
  }
  nodes {
    name: "dgx03"
    state: NODE_STATE_UP
    gpus: 8
    gpus_free: 5
    model: "dgx-h100"
    leaf: "su0"
    agent_connected: true
    jobs: 50
    jobs: 51
  }
  nodes { name: "dgx04" state: NODE_STATE_UP gpus: 8 gpus_free: 8 model: "dgx-h100" leaf: "su1" agent_connected: true }
  nodes { name: "dgx05" state: NODE_STATE_UP gpus: 8 gpus_free: 8 model: "dgx-h100" leaf: "su1" agent_connected: true }
  nodes {
    name: "dgx06"
    state: NODE_STATE_DRAIN
    gpus: 8
    gpus_free: 8
    model: "dgx-h100"
    leaf: "su1"
    reason: "bad fan"
    agent_connected: true
  }
  nodes { name: "dgx07" state: NODE_STATE_DOWN gpus: 8 model: "dgx-h100" leaf: "su1" reason: "no heartbeat" }
  nodes { name: "dgx08" state: NODE_STATE_UP gpus: 8 gpus_free: 8 model: "dgx-h100" leaf: "su1" }
)pb";

v1::ListNodesResponse Nodes() {
  v1::ListNodesResponse r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kNodes, &r));
  return r;
}

TEST(NodeTable, SummaryByState) {
  EXPECT_EQ(FormatNodeSummary(Nodes()),
            "STATE  NODES  GPUS  FREE  NODELIST\n"
            "idle       2    16    16  dgx[04-05]\n"
            "idle*      1     8     8  dgx08\n"
            "mix        1     8     5  dgx03\n"
            "alloc      2    16     0  dgx[01-02]\n"
            "drain      1     8     0  dgx06\n"
            "down       1     8     0  dgx07\n");
}

TEST(NodeTable, OneLinePerNode) {
  const std::string t = FormatNodeLines(Nodes());
  EXPECT_THAT(t, HasSubstr("NODE   STATE  GPUS  FREE  MODEL     LEAF  JOBS   REASON\n"));
  EXPECT_THAT(t, HasSubstr("dgx01  alloc     8     0  dgx-h100  su0   41\n"));
  EXPECT_THAT(t, HasSubstr("dgx03  mix       8     5  dgx-h100  su0   50,51\n"));
  EXPECT_THAT(t, HasSubstr("dgx06  drain     8     8  dgx-h100  su1   -      bad fan\n"));
  EXPECT_THAT(t, HasSubstr("dgx07  down      8     0  dgx-h100  su1   -      no heartbeat\n"));
  EXPECT_THAT(t, HasSubstr("dgx08  idle*     8     8"));
}

// Issue 14: wide names (CJK, emoji, fullwidth) in ginfo's tables keep every column at the same
// terminal column (util/printable.h DisplayWidth), and a control byte never reaches the terminal.
TEST(NodeTable, WideNamesStayAligned) {
  v1::ListNodesResponse r;
  const std::vector<std::string> names = {"节点01", "\xf0\x9f\x9a\x80n2", "ｎ３", "n4"};
  const std::vector<std::string> reasons = {"", "风扇坏了", "fan\x1b[2J", ""};
  for (size_t i = 0; i < names.size(); ++i) {
    v1::Node* n = r.add_nodes();
    n->set_name(names[i]);
    n->set_state(reasons[i].empty() ? v1::NODE_STATE_UP : v1::NODE_STATE_DRAIN);
    n->set_gpus(8);
    n->set_gpus_free(8);
    n->set_model("模型-h100");
    n->set_leaf("叶0");
    n->set_reason(reasons[i]);
    n->set_agent_connected(true);
  }
  EXPECT_EQ(FormatNodeLines(r),
            "NODE    STATE  GPUS  FREE  MODEL      LEAF  JOBS  REASON\n"
            "节点01  idle      8     8  模型-h100  叶0   -\n"
            "\xf0\x9f\x9a\x80n2    drain     8     8  模型-h100  叶0   -     风扇坏了\n"
            "ｎ３    drain     8     8  模型-h100  叶0   -     fan\\x1b[2J\n"
            "n4      idle      8     8  模型-h100  叶0   -\n");
}

TEST(NodeTable, DrainingWhileJobsRun) {
  v1::Node n;
  n.set_state(v1::NODE_STATE_DRAIN);
  n.set_agent_connected(true);
  n.add_jobs(3);
  EXPECT_EQ(NodeStateText(n), "drng");
  n.clear_jobs();
  EXPECT_EQ(NodeStateText(n), "drain");
}

TEST(NodeTable, Fragmentation) {
  v1::GetFragmentationResponse f;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        levels { level: "spine" domains: 1 whole_free: 0 largest_free_block: 29 domain_gpus: 64 }
        levels { level: "leaf" domains: 2 whole_free: 0 largest_free_block: 24 domain_gpus: 32 }
        levels { level: "node" domains: 8 whole_free: 3 largest_free_block: 8 domain_gpus: 8 }
        fgd: 0.1875
      )pb",
      &f));
  EXPECT_EQ(FormatFragmentation(f),
            "LEVEL  DOMAINS  WHOLE_FREE  LARGEST_FREE  DOMAIN_GPUS\n"
            "spine        1           0            29           64\n"
            "leaf         2           0            24           32\n"
            "node         8           3             8            8\n"
            "fragmentation (FGD): 0.188\n");
}

TEST(NodeTable, ExplainPending) {
  setenv("TZ", "UTC", 1);
  tzset();
  v1::ExplainPendingResponse why;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
                                                              reason: "TopologyBlock"
                                                              detail: "leaf"
                                                              predicted_start: 1700003600
                                                              queue_position: 3
                                                              reserved_gpus { node: "dgx04" index: 0 }
                                                              reserved_gpus { node: "dgx04" index: 1 }
                                                              reserved_gpus { node: "dgx05" index: 0 }
                                                            )pb",
                                                            &why));
  EXPECT_EQ(FormatExplain(43, why, 1700000000),
            "job 43: pending (TopologyBlock: leaf)\n"
            "  queue position:  3\n"
            "  predicted start: 2023-11-14T23:13:20 (in 1:00:00)\n"
            "  reserved GPUs:   dgx04:0-1,dgx05:0\n");
  EXPECT_EQ(FormatExplain(9, v1::ExplainPendingResponse(), 1700000000),
            "job 9: pending (None)\n"
            "  predicted start: N/A\n");
}

}  // namespace
}  // namespace phalanx::cli

namespace phalanx::cli {
namespace {

// Slurm mode: Slurm's own jobs on a node are listed after Phalanx's, as gq names them.
TEST(NodeTable, SlurmsOwnJobsInTheJobsColumn) {
  v1::ListNodesResponse r;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
                                                              nodes {
                                                                name: "n1"
                                                                state: NODE_STATE_UP
                                                                gpus: 8
                                                                gpus_free: 2
                                                                agent_connected: true
                                                                jobs: 3
                                                                gpus_slurm: 4
                                                                slurm_jobs: 12
                                                                slurm_jobs: 14
                                                              }
                                                            )pb",
                                                            &r));
  EXPECT_THAT(FormatNodeLines(r), HasSubstr("n1    mix       8     2  -      -     3,slurm:12,slurm:14\n"));
}

}  // namespace
}  // namespace phalanx::cli
