// Per-partition automatic failover through the admin API, over loopback: the
// account property in GET /, moving one range's writes to another region and
// back, the hub-region-only header, the multi-write refusal, a split, and
// the 400 texts of bad input.

#include "tests/emulator/server_fixture.hpp"

namespace {

using namespace georoute;
using namespace georoute::emulator_testing;

const std::string hub_header = "x-ms-cosmos-hub-region-processing-only";

class EmulatorPpafAdmin : public EmulatorServer {
protected:
  void SetUp() override {
    EmulatorServer::SetUp();
    if (HasFatalFailure()) return;
    create_collection();
    // One partition key per range, written at West US (the write region).
    for (int i = 0; i < 32 && (in0.empty() || in1.empty()); ++i) {
      auto pk = "k" + std::to_string(i);
      auto o = write("West US", pk, "doc-" + pk);
      ASSERT_EQ(o.status, 201) << o.error_detail << o.body;
      auto range = o.session_token.substr(0, o.session_token.find(':'));
      auto& slot = range == "0" ? in0 : in1;
      if (slot.empty()) slot = pk;
    }
    ASSERT_FALSE(in0.empty());
    ASSERT_FALSE(in1.empty());
  }

  /// The error text of a 400 answer.
  std::string error_of(const std::string& method, const std::string& path,
                       const std::string& body = {}) {
    auto o = admin(method, path, body);
    EXPECT_EQ(o.status, 400)
        << method << " " << path << " " << body << ": " << o.body;
    return parse(o).value("error", std::string{});
  }

  static std::vector<std::pair<std::string, std::string>>
  pk_header(const std::string& pk) {
    return {{"x-ms-documentdb-partitionkey", json::array({pk}).dump()}};
  }

  transport::outcome write(const std::string& region, const std::string& pk,
                           const std::string& id) {
    return send("POST", emu->endpoint(region), "/dbs/d/colls/c/docs",
                json{{"id", id}, {"pk", pk}}.dump(), pk_header(pk));
  }

  transport::outcome read(const std::string& region, const std::string& pk,
                          bool hub_only) {
    auto h = pk_header(pk);
    if (hub_only) h.emplace_back(hub_header, "True");
    return send("GET", emu->endpoint(region), "/dbs/d/colls/c/docs/doc-" + pk,
                {}, h);
  }

  static std::string status_of(const transport::outcome& o) {
    if (o.status == 0) return "no answer: " + o.error_detail;
    return std::to_string(o.status) +
           (o.substatus ? "/" + std::to_string(o.substatus) : "");
  }

  /// enablePerPartitionFailoverBehavior in GET / at `endpoint` (null when
  /// absent).
  json account_property(const std::string& endpoint) {
    auto o = send("GET", endpoint, "/");
    EXPECT_EQ(o.status, 200) << o.error_detail;
    auto j = parse(o);
    return j.value("enablePerPartitionFailoverBehavior", json(nullptr));
  }

  std::string in0; ///< a partition key in range "0"
  std::string in1; ///< a partition key in range "1"
};

TEST_F(EmulatorPpafAdmin, AccountProperty_AbsentTrueFalse_InGetAccount) {
  EXPECT_TRUE(account_property(emu->global_endpoint()).is_null());
  EXPECT_TRUE(account_property(west()).is_null());
  EXPECT_TRUE(parse(admin("GET", "ppaf"))["enabled"].is_null());

  ASSERT_EQ(admin("POST", "ppaf", R"({"enabled":true})").status, 200);
  EXPECT_EQ(account_property(emu->global_endpoint()), json(true));
  EXPECT_EQ(account_property(emu->endpoint("North Europe")), json(true));
  EXPECT_EQ(parse(admin("GET", "ppaf"))["enabled"], json(true));
  EXPECT_EQ(parse(admin("GET", "state"))["ppaf"]["enabled"], json(true));

  ASSERT_EQ(admin("POST", "ppaf", R"({"enabled":false})").status, 200);
  EXPECT_EQ(account_property(west()), json(false));
  EXPECT_EQ(emu->control().per_partition_failover(),
            std::optional<bool>{false});

  ASSERT_EQ(admin("POST", "ppaf", R"({"enabled":null})").status, 200);
  EXPECT_TRUE(account_property(west()).is_null());
}

TEST_F(EmulatorPpafAdmin, MoveAndClear_WritesFollowTheRange) {
  auto o = admin("POST", "ppaf/move",
                 R"({"db":"d","coll":"c","range":"0","region":"East US"})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto listed = parse(admin("GET", "ppaf"))["moves"];
  EXPECT_EQ(listed, json::parse(R"([{"collection":"dbs/d/colls/c",)"
                                R"("range":"0","region":"East US"}])"));
  EXPECT_EQ(parse(admin("GET", "state"))["ppaf"]["moves"], listed);

  EXPECT_EQ(status_of(write("East US", in0, "a")), "201");
  EXPECT_EQ(status_of(write("West US", in0, "b")), "403/3");
  EXPECT_EQ(
      status_of(send("POST", emu->global_endpoint(), "/dbs/d/colls/c/docs",
                     json{{"id", "b"}, {"pk", in0}}.dump(), pk_header(in0))),
      "403/3");
  EXPECT_EQ(status_of(write("West US", in1, "c")), "201");
  EXPECT_EQ(status_of(write("East US", in1, "d")), "403/3");
  // The hub-region-only read: the range's write region answers.
  EXPECT_EQ(status_of(read("East US", in0, true)), "200");
  EXPECT_EQ(status_of(read("West US", in0, true)), "403/3");
  EXPECT_EQ(status_of(read("West US", in0, false)), "200");
  EXPECT_EQ(status_of(read("West US", in1, true)), "200");
  // The 403s are counted like any other answer.
  auto counters = parse(admin("GET", "counters/ranges"));
  EXPECT_EQ(counters["West US"]["dbs/d/colls/c"]["0"]["status"]["403"], 2)
      << counters.dump();

  o = admin("POST", "ppaf/clear", R"({"db":"d","coll":"c","range":"0"})");
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(parse(o)["cleared"], json(true));
  EXPECT_EQ(status_of(write("West US", in0, "e")), "201");
  EXPECT_EQ(status_of(write("East US", in0, "f")), "403/3");
  EXPECT_EQ(status_of(read("East US", in0, true)), "403/3");
  EXPECT_EQ(parse(admin("GET", "ppaf"))["moves"], json::array());
  o = admin("POST", "ppaf/clear", R"({"db":"d","coll":"c","range":"0"})");
  EXPECT_EQ(parse(o)["cleared"], json(false));
}

TEST_F(EmulatorPpafAdmin, MultiWriteAccount_MoveRefused400) {
  ASSERT_EQ(admin("POST", "multi-write", R"({"enabled":true})").status, 200);
  auto e = error_of("POST", "ppaf/move",
                    R"({"db":"d","coll":"c","range":"0","region":"East US"})");
  EXPECT_EQ(e.rfind("account:", 0), 0u) << e;
  EXPECT_NE(e.find("multi-write"), std::string::npos) << e;
  EXPECT_EQ(parse(admin("GET", "ppaf"))["moves"], json::array());
}

TEST_F(EmulatorPpafAdmin, Split_ChildrenInheritTheMove) {
  ASSERT_EQ(
      admin("POST", "ppaf/move",
            R"({"db":"d","coll":"c","range":"1","region":"North Europe"})")
          .status,
      200);
  auto o = admin("POST", "split", R"({"db":"d","coll":"c","range":"1"})");
  ASSERT_EQ(o.status, 200) << o.body;
  auto children = parse(o)["children"];
  ASSERT_EQ(children.size(), 2u);
  auto moves = parse(admin("GET", "ppaf"))["moves"];
  ASSERT_EQ(moves.size(), 2u) << moves.dump();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(moves[i]["range"], children[i]);
    EXPECT_EQ(moves[i]["region"], "North Europe");
  }
  EXPECT_EQ(status_of(write("North Europe", in1, "a")), "201");
  EXPECT_EQ(status_of(write("West US", in1, "b")), "403/3");
  // The parent is gone.
  auto e =
      error_of("POST", "ppaf/clear", R"({"db":"d","coll":"c","range":"1"})");
  EXPECT_EQ(e.rfind("range:", 0), 0u) << e;
  EXPECT_NE(e.find("gone"), std::string::npos) << e;
}

TEST_F(EmulatorPpafAdmin, BadInput_400NamingTheField) {
  auto move = [&](const std::string& body) {
    return error_of("POST", "ppaf/move", body);
  };
  EXPECT_EQ(move(R"({"db":"x","coll":"c","range":"0","region":"East US"})")
                .rfind("db:", 0),
            0u);
  EXPECT_EQ(move(R"({"db":"d","coll":"x","range":"0","region":"East US"})")
                .rfind("coll:", 0),
            0u);
  auto range = move(R"({"db":"d","coll":"c","range":"9","region":"East US"})");
  EXPECT_EQ(range.rfind("range:", 0), 0u) << range;
  EXPECT_NE(range.find("'9'"), std::string::npos) << range;
  auto region = move(R"({"db":"d","coll":"c","range":"0","region":"Mars"})");
  EXPECT_EQ(region.rfind("region:", 0), 0u) << region;
  EXPECT_NE(region.find("Mars"), std::string::npos) << region;
  EXPECT_EQ(move(R"({"db":"d","coll":"c","range":"0"})").rfind("region:", 0),
            0u);
  EXPECT_EQ(move(R"({"db":"d","coll":"c","range":0,"region":"East US"})")
                .rfind("range:", 0),
            0u);
  EXPECT_EQ(move(R"({"db":"d","coll":"c","range":"0","region":"East US",)"
                 R"("force":true})")
                .rfind("force:", 0),
            0u);
  EXPECT_EQ(error_of("POST", "ppaf/clear",
                     R"({"db":"d","coll":"c","range":"0","region":"East US"})")
                .rfind("region:", 0),
            0u);
  EXPECT_EQ(
      error_of("POST", "ppaf", R"({"enabled":"yes"})").rfind("enabled:", 0),
      0u);
  EXPECT_EQ(error_of("POST", "ppaf", "{}").rfind("enabled:", 0), 0u);
  EXPECT_EQ(admin("GET", "ppaf/move").status, 405);
  EXPECT_EQ(admin("DELETE", "ppaf").status, 405);
  EXPECT_EQ(admin("POST", "ppaf/elsewhere", "{}").status, 404);
  EXPECT_EQ(parse(admin("GET", "ppaf"))["moves"], json::array());
  EXPECT_TRUE(parse(admin("GET", "ppaf"))["enabled"].is_null());
}

} // namespace
