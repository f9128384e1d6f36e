//===- tessel-tblgen.cpp - The op table, generated from ODS ---------------===//
//
// Reads the dialect's ODS (the Tessel_Instruction and Tessel_OnnxOneToOne
// mixins of dialects/tessel/TesselRuntime.td) and writes what would otherwise
// be kept by hand in several places, so that they cannot drift:
//
//   -gen-runtime-op-kinds   the runtime's op-kind list (X-macros over kind,
//                           name, number, check family and attributes);
//   -gen-op-kind-proto      the artifact schema's OpKind enum;
//   -gen-export-encoders    the exporter's per-op attribute encoders;
//   -gen-onnx-one-to-one    the importer's rows for one-to-one ONNX ops.
//
// The first two are checked in (the runtime builds without LLVM); the test
// `op-table-in-sync` compares them with what this tool generates.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"

#include <map>
#include <string>
#include <vector>

using namespace llvm;

namespace {

enum class Action { OpKinds, OpKindProto, ExportEncoders, OnnxOneToOne };

cl::opt<Action> action(
    cl::desc("What to generate:"),
    cl::values(
        clEnumValN(Action::OpKinds, "gen-runtime-op-kinds",
                   "the runtime's op-kind list (OpKinds.inc)"),
        clEnumValN(Action::OpKindProto, "gen-op-kind-proto",
                   "the artifact schema's OpKind enum (op_kind.proto)"),
        clEnumValN(Action::ExportEncoders, "gen-export-encoders",
                   "the exporter's attribute encoders"),
        clEnumValN(Action::OnnxOneToOne, "gen-onnx-one-to-one",
                   "the importer's one-to-one rows")));

/// One attribute of an instruction.
struct RtAttr {
  std::string name;  // in the artifact
  std::string value; // C++ over $_op and $_ctx
  std::string type;  // int | ints | float | str
};

/// One instruction of the runtime.
struct Instruction {
  const Record *def;
  int kind;
  std::string name;   // "leaky_relu"
  std::string enumer; // "LeakyRelu"
  std::string check;  // "unary"
  std::string cppClass; // "LeakyReluOp"; empty for runtime-only instructions
  std::vector<RtAttr> attrs;
};

/// The ODS attribute constraint of op argument `name`, unwrapped from
/// DefaultValuedAttr / OptionalAttr; null when the op has no such attribute.
const Record *odsAttr(const Record *op, StringRef name) {
  const DagInit *args = op->getValueAsDag("arguments");
  for (unsigned i = 0; i < args->getNumArgs(); ++i) {
    if (args->getArgNameStr(i) != name)
      continue;
    const auto *def = dyn_cast<DefInit>(args->getArg(i));
    if (!def)
      return nullptr;
    const Record *r = def->getDef();
    while (r->getValue("baseAttr"))
      if (const auto *b = dyn_cast<DefInit>(r->getValueInit("baseAttr")))
        r = b->getDef();
      else
        break;
    return r->isSubClassOf("Attr") ? r : nullptr;
  }
  return nullptr;
}

/// The default of op argument `name` (a DefaultValuedAttr's C++ value), or
/// "" when it has none.
std::string odsDefault(const Record *op, StringRef name) {
  const DagInit *args = op->getValueAsDag("arguments");
  for (unsigned i = 0; i < args->getNumArgs(); ++i)
    if (args->getArgNameStr(i) == name)
      if (const auto *def = dyn_cast<DefInit>(args->getArg(i)))
        if (def->getDef()->getValue("defaultValue"))
          return def->getDef()->getValueAsString("defaultValue").trim().str();
  return "";
}

/// The artifact type of an ODS attribute: int | ints | float | str.
std::string typeOf(const Record *attr) {
  if (attr->isSubClassOf("EnumAttrInfo") || attr->isSubClassOf("EnumInfo"))
    return "str";
  StringRef storage = attr->getValueAsString("storageType").trim();
  if (storage == "::mlir::BoolAttr" || storage == "::mlir::UnitAttr" ||
      storage == "::mlir::IntegerAttr")
    return "int";
  if (storage == "::mlir::FloatAttr")
    return "float";
  if (storage == "::mlir::DenseI64ArrayAttr")
    return "ints";
  if (storage == "::mlir::StringAttr")
    return "str";
  return "";
}

std::string cppClassOf(const Record *def) {
  StringRef n = def->getName();
  return n.substr(n.find('_') + 1).str();
}

std::vector<Instruction> collect(const RecordKeeper &records) {
  std::vector<Instruction> out;
  std::map<int, const Record *> byKind;
  for (const Record *def :
       records.getAllDerivedDefinitions("Tessel_Instruction")) {
    Instruction in;
    in.def = def;
    in.kind = def->getValueAsInt("rtKind");
    in.check = def->getValueAsString("rtCheck").str();
    const bool isOp = def->isSubClassOf("Op");
    if (isOp)
      in.cppClass = cppClassOf(def);
    in.name = def->getValueAsString("rtName").str();
    if (in.name.empty() && isOp)
      in.name = def->getValueAsString("opName").str();
    in.enumer = def->getValueAsString("rtEnum").str();
    if (in.enumer.empty() && isOp)
      in.enumer = StringRef(in.cppClass).drop_back(2).str();
    if (in.name.empty() || in.enumer.empty())
      PrintFatalError(def->getLoc(), "an instruction without an op needs a "
                                     "name and an enumerator");
    if (in.kind <= 0 || in.kind > 255)
      PrintFatalError(def->getLoc(), "instruction kind " +
                                         Twine(in.kind) +
                                         " is outside 1..255");
    if (auto [it, fresh] = byKind.emplace(in.kind, def); !fresh)
      PrintFatalError(def->getLoc(), "instruction kind " + Twine(in.kind) +
                                         " is already " +
                                         it->second->getName());
    for (const Record *a : def->getValueAsListOfDefs("rtAttrs")) {
      RtAttr attr;
      attr.name = a->getValueAsString("rtName").str();
      attr.value = a->getValueAsString("rtValue").str();
      attr.type = a->getValueAsString("rtType").str();
      if (attr.value.empty() || attr.type.empty()) {
        const Record *ods = isOp ? odsAttr(def, attr.name) : nullptr;
        if (!ods)
          PrintFatalError(def->getLoc(),
                          "instruction attribute '" + attr.name +
                              "' is no attribute of the op; give its value "
                              "and type");
        if (attr.value.empty())
          attr.value = "$_op.get" +
                       convertToCamelFromSnakeCase(attr.name, true) + "()";
        if (attr.type.empty())
          attr.type = typeOf(ods);
        if (attr.type.empty())
          PrintFatalError(def->getLoc(), "attribute '" + attr.name +
                                             "' has a storage type the "
                                             "runtime cannot hold");
      }
      in.attrs.push_back(attr);
    }
    out.push_back(std::move(in));
  }
  llvm::sort(out, [](const Instruction &a, const Instruction &b) {
    return a.kind < b.kind;
  });
  return out;
}

std::string upperSnake(StringRef name) { return name.upper(); }

std::string camel(StringRef s) { return convertToCamelFromSnakeCase(s, true); }

void header(raw_ostream &os, StringRef what) {
  os << "// " << what << "\n"
     << "// Generated by tessel-tblgen from dialects/tessel/*.td: do not edit.\n"
     << "// Regenerate with scripts/gen-op-table after changing ODS.\n";
}

/// TESSEL_RUNTIME_UNARY_SCALAR_OPS: the Tessel_ScalarFunction ops, each with
/// the statements that set its functor `f`'s members from instruction `op`.
void emitUnaryScalarOps(raw_ostream &os, const RecordKeeper &records,
                        const std::vector<Instruction> &ins) {
  os << "\n// X(Enumerator, Types, SetMembers): the unary ops whose math is "
        "the functor\n// scalar::Enumerator<M> of "
        "tessel/runtime/ScalarOps.h, over Types (scalar::Float,\n// "
        "Numeric, Bool); SetMembers sets functor `f`'s attribute members "
        "from the\n// instruction `op` (a tessel::runtime::Op).\n"
        "#define TESSEL_RUNTIME_UNARY_SCALAR_OPS(X) \\\n";
  std::map<const Record *, const Instruction *> byDef;
  for (const Instruction &in : ins)
    byDef[in.def] = &in;
  std::vector<const Instruction *> ops;
  for (const Record *def :
       records.getAllDerivedDefinitions("Tessel_ScalarFunction")) {
    auto it = byDef.find(def);
    if (it == byDef.end() || it->second->check != "unary")
      PrintFatalError(def->getLoc(), "Tessel_ScalarFunction needs a "
                                     "Tessel_Instruction of the unary family");
    StringRef types = def->getValueAsString("scalarTypes");
    if (types != "Float" && types != "Numeric" && types != "Bool")
      PrintFatalError(def->getLoc(), "scalar function types '" + types +
                                         "' are none of Float, Numeric, "
                                         "Bool");
    ops.push_back(it->second);
  }
  llvm::sort(ops, [](const Instruction *a, const Instruction *b) {
    return a->kind < b->kind;
  });
  for (const Instruction *in : ops) {
    std::string set;
    for (const RtAttr &a : in->attrs) {
      const Record *ods = odsAttr(in->def, a.name);
      std::string dflt = odsDefault(in->def, a.name);
      StringRef storage =
          ods ? ods->getValueAsString("storageType").trim() : StringRef();
      std::string member = convertToCamelFromSnakeCase(a.name);
      if (a.type == "float")
        set += formatv("f.{0} = op.floatAttr(\"{1}\", {2});", member, a.name,
                       dflt.empty() ? "0.0f" : dflt);
      else if (a.type == "int" && (storage == "::mlir::UnitAttr" ||
                                   storage == "::mlir::BoolAttr"))
        set += formatv("f.{0} = op.intAttr(\"{1}\", 0) != 0;", member,
                       a.name);
      else if (a.type == "int")
        set += formatv("f.{0} = op.intAttr(\"{1}\", {2});", member, a.name,
                       dflt.empty() ? "0" : dflt);
      else
        PrintFatalError(in->def->getLoc(),
                        "attribute '" + a.name + "' of a scalar function "
                        "must be a number");
    }
    os << formatv("  X({0}, {1}, {2}) \\\n", in->enumer,
                  in->def->getValueAsString("scalarTypes"), set);
  }
}

/// TESSEL_RUNTIME_BINARY_SCALAR_OPS: the Tessel_BinaryScalarFunction ops.
void emitBinaryScalarOps(raw_ostream &os, const RecordKeeper &records,
                         const std::vector<Instruction> &ins) {
  os << "\n// X(Enumerator, Types): the binary ops whose math is the functor\n"
        "// scalar::Enumerator<M> of tessel/runtime/BinaryOps.h, over Types\n"
        "// (scalar::Float, Numeric, Integer), operands broadcast as in numpy.\n"
        "#define TESSEL_RUNTIME_BINARY_SCALAR_OPS(X) \\\n";
  std::map<const Record *, const Instruction *> byDef;
  for (const Instruction &in : ins)
    byDef[in.def] = &in;
  std::vector<const Instruction *> ops;
  for (const Record *def :
       records.getAllDerivedDefinitions("Tessel_BinaryScalarFunction")) {
    auto it = byDef.find(def);
    if (it == byDef.end() || it->second->check != "binary")
      PrintFatalError(def->getLoc(), "Tessel_BinaryScalarFunction needs a "
                                     "Tessel_Instruction of the binary family");
    StringRef types = def->getValueAsString("binaryScalarTypes");
    if (types != "Float" && types != "Numeric" && types != "Integer")
      PrintFatalError(def->getLoc(), "binary scalar function types '" + types +
                                         "' are none of Float, Numeric, "
                                         "Integer");
    ops.push_back(it->second);
  }
  llvm::sort(ops, [](const Instruction *a, const Instruction *b) {
    return a->kind < b->kind;
  });
  for (const Instruction *in : ops)
    os << formatv("  X({0}, {1}) \\\n", in->enumer,
                  in->def->getValueAsString("binaryScalarTypes"));
}

bool emitOpKinds(raw_ostream &os, const RecordKeeper &records) {
  header(os, "The runtime's instruction set (OpKind.h includes this).");
  os << "\n// X(Enumerator, \"name\", number)\n"
        "#define TESSEL_RUNTIME_OP_KINDS(X) \\\n";
  std::vector<Instruction> ins = collect(records);
  for (const Instruction &in : ins)
    os << formatv("  X({0}, \"{1}\", {2}) \\\n", in.enumer, in.name,
                  in.kind);
  os << "\n// X(Enumerator, CheckFamily): the load-time checks of each kind\n"
        "#define TESSEL_RUNTIME_OP_CHECKS(X) \\\n";
  for (const Instruction &in : ins)
    os << formatv("  X({0}, {1}) \\\n", in.enumer, camel(in.check));
  os << "\n// X(Enumerator, \"attribute\", Type): the attributes each kind "
        "declares\n#define TESSEL_RUNTIME_OP_ATTRS(X) \\\n";
  for (const Instruction &in : ins)
    for (const RtAttr &a : in.attrs)
      os << formatv("  X({0}, \"{1}\", {2}) \\\n", in.enumer, a.name,
                    camel(a.type));
  emitUnaryScalarOps(os, records, ins);
  emitBinaryScalarOps(os, records, ins);
  os << "\n";
  return false;
}

bool emitOpKindProto(raw_ostream &os, const RecordKeeper &records) {
  header(os, "The artifact schema's instruction set (imported by "
             "artifact.proto).");
  os << "// Semantics: runtime/README.md. Numbers are never reused.\n"
        "syntax = \"proto3\";\n\npackage tessel.artifact;\n\n"
        "enum OpKind {\n  OP_UNSPECIFIED = 0;\n";
  // One line per check family (the kinds of a family are numbered
  // together); each kind's attributes in a comment after the enum.
  std::vector<Instruction> ins = collect(records);
  for (size_t i = 0; i < ins.size();) {
    os << " ";
    size_t j = i;
    for (; j < ins.size() && ins[j].check == ins[i].check; ++j)
      os << " " << upperSnake(ins[j].name) << " = " << ins[j].kind << ";";
    os << " // " << ins[i].check << "\n";
    i = j;
  }
  os << "}\n\n// Attributes (name:type):\n";
  for (const Instruction &in : ins) {
    if (in.attrs.empty())
      continue;
    os << "//   " << in.name << ":";
    for (const RtAttr &a : in.attrs)
      os << " " << a.name << ":" << a.type;
    os << "\n";
  }
  return false;
}

std::string substitute(std::string s) {
  auto replaceAll = [&](StringRef from, StringRef to) {
    for (size_t p = s.find(from.str()); p != std::string::npos;
         p = s.find(from.str(), p + to.size()))
      s.replace(p, from.size(), to.str());
  };
  replaceAll("$_op", "o");
  replaceAll("$_ctx", "ctx");
  return s;
}

bool emitExportEncoders(raw_ostream &os, const RecordKeeper &records) {
  header(os, "The exporter's attribute encoders, one per instruction op.");
  os << R"(//
// Included by lib/Export/ExportArtifact.cpp, which defines InstructionEncoding
// and the encodeAttr overloads (bool, integers, APFloat, ArrayRef<int64_t>,
// strings, enums) before it.

/// Sets `enc` to the instruction `op` becomes; false when `op` is none.
template <typename Ctx>
bool encodeInstruction(::mlir::Operation *op, Ctx &ctx,
                       InstructionEncoding &enc) {
  (void)ctx;
)";
  for (const Instruction &in : collect(records)) {
    if (in.cppClass.empty())
      continue;
    os << formatv("  if (auto o = ::llvm::dyn_cast<::mlir::tessel::{0}>(op)) "
                  "{{\n    enc.name = \"{1}\";\n",
                  in.cppClass, in.name);
    for (const RtAttr &a : in.attrs)
      os << formatv("    encodeAttr(enc.attrs, \"{0}\", {1});\n", a.name,
                    substitute(a.value));
    os << "    (void)o;\n    return true;\n  }\n";
  }
  os << "  return false;\n}\n";
  return false;
}

bool emitOnnxOneToOne(raw_ostream &os, const RecordKeeper &records) {
  header(os, "The importer's one-to-one rows.");
  os << "//\n// Included by lib/Import/OpImporters.cpp, which defines "
        "OneToOneAttr,\n// OneToOneImport and importOneToOne<> before it.\n\n";
  std::string rows;
  for (const Record *def :
       records.getAllDerivedDefinitions("Tessel_OnnxOneToOne")) {
    if (!def->isSubClassOf("Op"))
      PrintFatalError(def->getLoc(), "Tessel_OnnxOneToOne needs an op");
    std::string cls = cppClassOf(def);
    std::string opName = (def->getValueAsDef("opDialect")
                              ->getValueAsString("name") +
                          "." + def->getValueAsString("opName"))
                             .str();
    std::vector<std::string> attrs;
    for (const Record *a : def->getValueAsListOfDefs("onnxAttrs")) {
      StringRef ir = a->getValueAsString("irName");
      const Record *ods = odsAttr(def, ir);
      std::string type = ods ? typeOf(ods) : "";
      if (type != "int" && type != "float")
        PrintFatalError(def->getLoc(), "ONNX attribute '" +
                                           a->getValueAsString("onnxName") +
                                           "' must map onto an integer or "
                                           "float attribute of the op");
      attrs.push_back(formatv("{{\"{0}\", \"{1}\", \"{2}\", OneToOneAttr::{3}}",
                              a->getValueAsString("onnxName"), ir,
                              a->getValueAsString("onnxDefault"),
                              type == "int" ? "Int" : "Float"));
    }
    if (!attrs.empty())
      os << formatv("static const OneToOneAttr kOneToOneAttrs_{0}[] = {{{1}};\n",
                    cls, join(attrs, ", "));
    // Operands: the arguments that are not attributes.
    const DagInit *args = def->getValueAsDag("arguments");
    unsigned operands = 0;
    for (unsigned i = 0; i < args->getNumArgs(); ++i)
      if (const auto *d = dyn_cast<DefInit>(args->getArg(i)))
        operands += !d->getDef()->isSubClassOf("Attr");
    os << formatv("static const OneToOneImport kOneToOne_{0} = {{\"{1}\", {2}, "
                  "{3}, {4}};\n",
                  cls, opName, operands,
                  attrs.empty() ? "nullptr" : "kOneToOneAttrs_" + cls,
                  attrs.size());
    rows += formatv("  {{\"{0}\", {1}, importOneToOne<&kOneToOne_{2}>}, \\\n",
                    def->getValueAsString("onnxOpType"),
                    def->getValueAsInt("onnxSince"), cls);
  }
  os << "\n#define TESSEL_ONNX_ONE_TO_ONE_ROWS \\\n" << rows << "\n";
  return false;
}

bool generate(raw_ostream &os, const RecordKeeper &records) {
  switch (action) {
  case Action::OpKinds:
    return emitOpKinds(os, records);
  case Action::OpKindProto:
    return emitOpKindProto(os, records);
  case Action::ExportEncoders:
    return emitExportEncoders(os, records);
  case Action::OnnxOneToOne:
    return emitOnnxOneToOne(os, records);
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::ParseCommandLineOptions(argc, argv);
  return TableGenMain(argv[0], &generate);
}
