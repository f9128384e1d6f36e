//===- TesselAttrs.cpp - sharding spec and rule attributes ----------------===//
//
// Parsing, printing and context-free verification of #tessel.sharding and
// #tessel.rule. Verification against a mesh and a tensor type is in
// Verifiers.cpp, where the attribute meets the value it describes.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessel;

#include "dialects/tessel/TesselEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tessel/TesselAttrs.cpp.inc"

void TesselDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/tessel/TesselAttrs.cpp.inc"
      >();
}

// DimShardingAttr and PartialAxisAttr stand bare inside #tessel.sharding and
// in angle brackets alone: `#tessel.dim<{"tp"}>`, `#tessel.partial<sum("tp")>`.

template <typename AttrT>
using InnerParser = FailureOr<AttrT> (*)(AsmParser &);

/// Parses `<inner>`.
template <typename AttrT>
static Attribute parseAngled(AsmParser &parser, InnerParser<AttrT> parseInner) {
  if (parser.parseLess())
    return {};
  FailureOr<AttrT> attr = parseInner(parser);
  if (failed(attr) || parser.parseGreater())
    return {};
  return *attr;
}

/// Prints `<inner>`.
template <typename AttrT>
static void printAngled(AsmPrinter &printer, AttrT attr,
                        void (*printInner)(AsmPrinter &, AttrT)) {
  printer << "<";
  printInner(printer, attr);
  printer << ">";
}

/// Parses `[inner, ...]` onto `out`.
template <typename AttrT>
static ParseResult parseSquareList(AsmParser &parser,
                                   InnerParser<AttrT> parseInner,
                                   SmallVectorImpl<AttrT> &out) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        FailureOr<AttrT> attr = parseInner(parser);
        if (failed(attr))
          return failure();
        out.push_back(*attr);
        return success();
      });
}

//===----------------------------------------------------------------------===//
// DimShardingAttr
//===----------------------------------------------------------------------===//

// Parses `{}`, `{"tp"}`, `{"dp", "tp", pad = 2}` (the braces included).
static FailureOr<DimShardingAttr> parseDimSharding(AsmParser &parser) {
  SmallVector<StringAttr> axes;
  int64_t pad = 0;
  MLIRContext *ctx = parser.getContext();
  auto loc = parser.getCurrentLocation();
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces, [&]() -> ParseResult {
        if (succeeded(parser.parseOptionalKeyword("pad")))
          return failure(parser.parseEqual() || parser.parseInteger(pad));
        std::string axis;
        if (parser.parseString(&axis))
          return failure();
        axes.push_back(StringAttr::get(ctx, axis));
        return success();
      }))
    return failure();
  DimShardingAttr dim = DimShardingAttr::getChecked(
      [&] { return parser.emitError(loc); }, ctx, axes, pad);
  if (!dim)
    return failure();
  return dim;
}

static void printDimSharding(AsmPrinter &printer, DimShardingAttr dim) {
  printer << "{";
  llvm::interleaveComma(dim.getAxes(), printer,
                        [&](StringAttr a) { printer << a; });
  if (dim.getPad() != 0)
    printer << (dim.getAxes().empty() ? "" : ", ") << "pad = " << dim.getPad();
  printer << "}";
}

Attribute DimShardingAttr::parse(AsmParser &parser, Type) {
  return parseAngled(parser, parseDimSharding);
}

void DimShardingAttr::print(AsmPrinter &printer) const {
  printAngled(printer, *this, printDimSharding);
}

LogicalResult
DimShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        ArrayRef<StringAttr> axes, int64_t pad) {
  // C1
  if (pad < 0)
    return emitError() << "pad must be non-negative, got " << pad;
  // C2
  llvm::SmallSet<StringRef, 4> seen;
  for (StringAttr axis : axes)
    if (!seen.insert(axis.getValue()).second)
      return emitError() << "axis \"" << axis.getValue()
                         << "\" is used twice in one dim";
  // C3
  if (pad != 0 && axes.empty())
    return emitError() << "pad " << pad << " on a dim that no axis splits";
  return success();
}

//===----------------------------------------------------------------------===//
// PartialAxisAttr
//===----------------------------------------------------------------------===//

// Parses `sum("tp")`.
static FailureOr<PartialAxisAttr> parsePartialAxis(AsmParser &parser) {
  StringRef kindName;
  std::string axis;
  auto loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&kindName))
    return failure();
  std::optional<ReductionKind> kind = symbolizeReductionKind(kindName);
  if (!kind)
    return parser.emitError(loc) << "unknown reduction kind '" << kindName
                                 << "' (expected sum, max, min or mean)";
  if (parser.parseLParen() || parser.parseString(&axis) || parser.parseRParen())
    return failure();
  return PartialAxisAttr::get(parser.getContext(),
                              StringAttr::get(parser.getContext(), axis), *kind);
}

static void printPartialAxis(AsmPrinter &printer, PartialAxisAttr partial) {
  printer << stringifyReductionKind(partial.getKind()) << "("
          << partial.getAxis() << ")";
}

Attribute PartialAxisAttr::parse(AsmParser &parser, Type) {
  return parseAngled(parser, parsePartialAxis);
}

void PartialAxisAttr::print(AsmPrinter &printer) const {
  printAngled(printer, *this, printPartialAxis);
}

//===----------------------------------------------------------------------===//
// TensorShardingAttr
//===----------------------------------------------------------------------===//

Attribute TensorShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  auto loc = parser.getCurrentLocation();
  StringAttr meshName;
  SmallVector<DimShardingAttr> dims;
  SmallVector<PartialAxisAttr> partials;
  if (parser.parseLess() || parser.parseSymbolName(meshName) ||
      parser.parseComma())
    return {};
  if (parseSquareList(parser, parseDimSharding, dims))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseSquareList(parser, parsePartialAxis, partials))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return TensorShardingAttr::getChecked(
      [&] { return parser.emitError(loc); }, ctx,
      FlatSymbolRefAttr::get(meshName), dims, partials);
}

void TensorShardingAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printAttributeWithoutType(getMesh());
  printer << ", [";
  llvm::interleaveComma(getDims(), printer,
                        [&](DimShardingAttr d) { printDimSharding(printer, d); });
  printer << "]";
  if (!getPartials().empty()) {
    printer << ", partial = [";
    llvm::interleaveComma(getPartials(), printer, [&](PartialAxisAttr p) {
      printPartialAxis(printer, p);
    });
    printer << "]";
  }
  printer << ">";
}

LogicalResult
TensorShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           FlatSymbolRefAttr mesh,
                           ArrayRef<DimShardingAttr> dims,
                           ArrayRef<PartialAxisAttr> partials) {
  // C1: an axis splits at most one dim, once, and is not also partial.
  llvm::SmallSet<StringRef, 8> seen;
  for (auto [i, dim] : llvm::enumerate(dims))
    for (StringAttr axis : dim.getAxes())
      if (!seen.insert(axis.getValue()).second)
        return emitError() << "axis \"" << axis.getValue()
                           << "\" is used twice (again in dim " << i << ")";
  for (PartialAxisAttr p : partials)
    if (!seen.insert(p.getAxis().getValue()).second)
      return emitError() << "axis \"" << p.getAxis().getValue()
                         << "\" is used twice (again as partial)";
  return success();
}

TensorShardingAttr TensorShardingAttr::getReplicated(MLIRContext *ctx,
                                                     FlatSymbolRefAttr mesh,
                                                     int64_t rank) {
  SmallVector<DimShardingAttr> dims(rank, DimShardingAttr::get(ctx, {}, 0));
  return get(ctx, mesh, dims, {});
}

bool TensorShardingAttr::isReplicated() const {
  return getPartials().empty() &&
         llvm::all_of(getDims(),
                      [](DimShardingAttr d) { return d.getAxes().empty(); });
}

bool TensorShardingAttr::usesAxis(StringRef axis) const {
  for (DimShardingAttr d : getDims())
    for (StringAttr a : d.getAxes())
      if (a.getValue() == axis)
        return true;
  return llvm::any_of(getPartials(), [&](PartialAxisAttr p) {
    return p.getAxis().getValue() == axis;
  });
}

//===----------------------------------------------------------------------===//
// OpShardingRuleAttr
//===----------------------------------------------------------------------===//

// Factors are named i, j, ..., z, a, ..., h, then z_1, z_2, ...
static std::string factorName(int64_t f) {
  if (f < 26)
    return std::string(1, static_cast<char>('a' + (f + 8) % 26));
  return "z_" + std::to_string(f - 25);
}

// Splits an identifier such as `ij` or `kz_1` into factor indices.
static FailureOr<SmallVector<int64_t>> parseFactorNames(StringRef token) {
  SmallVector<int64_t> factors;
  while (!token.empty()) {
    char c = token.front();
    if (c < 'a' || c > 'z')
      return failure();
    token = token.drop_front();
    if (c == 'z' && token.starts_with("_")) {
      StringRef digits = token.drop_front().take_while(llvm::isDigit);
      int64_t n;
      if (digits.empty() || digits.getAsInteger(10, n))
        return failure();
      factors.push_back(25 + n);
      token = token.drop_front(1 + digits.size());
      continue;
    }
    factors.push_back((c - 'a' + 26 - 8) % 26);
  }
  return factors;
}

static ParseResult parseTensorMappings(AsmParser &parser,
                                       SmallVectorImpl<TensorMappingAttr> &out) {
  MLIRContext *ctx = parser.getContext();
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Paren, [&]() -> ParseResult {
    SmallVector<DimMappingAttr> dims;
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() -> ParseResult {
          int64_t one;
          OptionalParseResult isInt = parser.parseOptionalInteger(one);
          if (isInt.has_value()) {
            if (failed(*isInt) || one != 1)
              return parser.emitError(parser.getCurrentLocation(),
                                      "expected factor names or 1");
            dims.push_back(DimMappingAttr::get(ctx, {}));
            return success();
          }
          StringRef token;
          auto loc = parser.getCurrentLocation();
          if (parser.parseKeyword(&token))
            return failure();
          FailureOr<SmallVector<int64_t>> factors = parseFactorNames(token);
          if (failed(factors))
            return parser.emitError(loc) << "bad factor names '" << token << "'";
          dims.push_back(DimMappingAttr::get(ctx, *factors));
          return success();
        }))
      return failure();
    out.push_back(TensorMappingAttr::get(ctx, dims));
    return success();
  });
}

static ParseResult parseFactorSet(AsmParser &parser,
                                  SmallVectorImpl<int64_t> &out) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces, [&]() -> ParseResult {
    StringRef token;
    auto loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&token))
      return failure();
    FailureOr<SmallVector<int64_t>> f = parseFactorNames(token);
    if (failed(f) || f->size() != 1)
      return parser.emitError(loc) << "bad factor name '" << token << "'";
    out.push_back(f->front());
    return success();
  });
}

Attribute OpShardingRuleAttr::parse(AsmParser &parser, Type) {
  auto loc = parser.getCurrentLocation();
  SmallVector<TensorMappingAttr> operands, results;
  SmallVector<int64_t> reduction, replication;
  SmallVector<std::pair<int64_t, int64_t>> sizes;
  if (parser.parseLess() || parseTensorMappings(parser, operands) ||
      parser.parseArrow() || parseTensorMappings(parser, results))
    return {};
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces, [&]() -> ParseResult {
        StringRef token;
        int64_t size;
        auto floc = parser.getCurrentLocation();
        if (parser.parseKeyword(&token) || parser.parseEqual() ||
            parser.parseInteger(size))
          return failure();
        FailureOr<SmallVector<int64_t>> f = parseFactorNames(token);
        if (failed(f) || f->size() != 1)
          return parser.emitError(floc) << "bad factor name '" << token << "'";
        sizes.push_back({f->front(), size});
        return success();
      }))
    return {};
  if (succeeded(parser.parseOptionalKeyword("reduction")) &&
      (parser.parseEqual() || parseFactorSet(parser, reduction)))
    return {};
  if (succeeded(parser.parseOptionalKeyword("need_replication")) &&
      (parser.parseEqual() || parseFactorSet(parser, replication)))
    return {};
  if (parser.parseGreater())
    return {};
  SmallVector<int64_t> factorSizes(sizes.size(), 0);
  for (auto [f, size] : sizes) {
    if (f >= static_cast<int64_t>(sizes.size())) {
      parser.emitError(loc) << "factor '" << factorName(f)
                            << "' is out of order: name factors i, j, k, ...";
      return {};
    }
    factorSizes[f] = size;
  }
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    factorSizes, operands, results, reduction, replication);
}

static void printTensorMappings(AsmPrinter &printer,
                                ArrayRef<TensorMappingAttr> mappings) {
  printer << "(";
  llvm::interleaveComma(mappings, printer, [&](TensorMappingAttr t) {
    printer << "[";
    llvm::interleaveComma(t.getDims(), printer, [&](DimMappingAttr d) {
      if (d.getFactors().empty())
        printer << "1";
      for (int64_t f : d.getFactors())
        printer << factorName(f);
    });
    printer << "]";
  });
  printer << ")";
}

static void printFactorSet(AsmPrinter &printer, StringRef keyword,
                           ArrayRef<int64_t> factors) {
  if (factors.empty())
    return;
  printer << " " << keyword << "={";
  llvm::interleaveComma(factors, printer,
                        [&](int64_t f) { printer << factorName(f); });
  printer << "}";
}

void OpShardingRuleAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printTensorMappings(printer, getOperandMappings());
  printer << " -> ";
  printTensorMappings(printer, getResultMappings());
  printer << " {";
  llvm::interleaveComma(llvm::enumerate(getFactorSizes()), printer,
                        [&](auto it) {
                          printer << factorName(it.index()) << "=" << it.value();
                        });
  printer << "}";
  printFactorSet(printer, "reduction", getReductionFactors());
  printFactorSet(printer, "need_replication", getNeedReplicationFactors());
  printer << ">";
}

LogicalResult OpShardingRuleAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> factorSizes,
    ArrayRef<TensorMappingAttr> operandMappings,
    ArrayRef<TensorMappingAttr> resultMappings,
    ArrayRef<int64_t> reductionFactors,
    ArrayRef<int64_t> needReplicationFactors) {
  int64_t n = factorSizes.size();
  // C1
  for (auto [f, size] : llvm::enumerate(factorSizes))
    if (size <= 0)
      return emitError() << "factor '" << factorName(f)
                         << "' has non-positive size " << size;
  auto checkMappings = [&](ArrayRef<TensorMappingAttr> mappings) {
    for (TensorMappingAttr t : mappings)
      for (DimMappingAttr d : t.getDims())
        for (int64_t f : d.getFactors())
          if (f < 0 || f >= n)
            return emitError() << "factor index " << f
                               << " is out of range [0, " << n << ")",
                   failure();
    return success();
  };
  if (failed(checkMappings(operandMappings)) ||
      failed(checkMappings(resultMappings)))
    return failure();
  // C2
  for (int64_t f : llvm::concat<const int64_t>(reductionFactors,
                                               needReplicationFactors))
    if (f < 0 || f >= n)
      return emitError() << "factor index " << f << " is out of range [0, " << n
                         << ")";
  return success();
}
