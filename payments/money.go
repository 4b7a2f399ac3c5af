package payments

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// Amounts are exact: the API's decimal numbers are read as decimals
// (never through float64) and stored as integers in the currency's minor
// units.

// maxMinor bounds an amount in minor units (10^15: far above any payment,
// far below int64's limit so sums never overflow).
const maxMinor = 1_000_000_000_000_000

// zeroDecimal and threeDecimal are the ISO 4217 currencies whose minor
// unit is not the cent; fourDecimal the two with four.
var (
	zeroDecimal  = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
	threeDecimal = "BHD IQD JOD KWD LYD OMR TND"
	fourDecimal  = "CLF UYW"
)

// jsonNumber is a JSON number, the only spelling of an amount: sign,
// digits, fraction, exponent. (big.Rat alone would also read "1/2",
// "0x10" and "1_000".)
var jsonNumber = regexp.MustCompile(`^(-?)((?:0|[1-9][0-9]*)(?:\.[0-9]+)?)(?:[eE]([+-]?[0-9]+))?$`)

// MinorUnits returns the number of decimal places of the currency's minor
// unit: 2 for most, 0 for JPY and its like, 3 for KWD and its like.
func MinorUnits(currency string) int {
	switch {
	case len(currency) != 3:
		return 2
	case strings.Contains(zeroDecimal, currency):
		return 0
	case strings.Contains(threeDecimal, currency):
		return 3
	case strings.Contains(fourDecimal, currency):
		return 4
	}
	return 2
}

// ParseAmount reads a decimal amount of currency in minor units. It must be
// positive, have no more decimal places than the currency's minor unit and
// be at most 10^15 minor units; msg says what is wrong otherwise.
func ParseAmount(n json.Number, currency string) (minor int64, msg string) {
	m := jsonNumber.FindStringSubmatch(string(n))
	if m == nil {
		return 0, "must be a number"
	}
	if m[1] == "-" || strings.Trim(m[2], "0.") == "" {
		return 0, "must be greater than 0"
	}
	// An exponent beyond the number's own length decides without
	// computing 10^exponent (big.Rat would, for up to 10^7): the amount is
	// far above the limit, or far below the smallest unit.
	if m[3] != "" {
		exp, err := strconv.Atoi(m[3])
		switch bound := len(n) + 20; {
		case exp > bound || err != nil && m[3][0] != '-':
			return 0, "is too large"
		case exp < -bound || err != nil:
			return 0, "has more decimal places than the currency allows"
		}
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return 0, "must be a number"
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(MinorUnits(currency))), nil)
	r.Mul(r, new(big.Rat).SetInt(scale))
	if !r.IsInt() {
		return 0, "has more decimal places than the currency allows"
	}
	if r.Num().Cmp(big.NewInt(maxMinor)) > 0 {
		return 0, "is too large"
	}
	return r.Num().Int64(), ""
}

// FormatAmount writes minor units of currency as a decimal number, with no
// trailing zeros: 1050 USD is 10.5.
func FormatAmount(minor int64, currency string) json.Number {
	units := MinorUnits(currency)
	sign, magnitude := "", uint64(minor)
	if minor < 0 {
		sign, magnitude = "-", -uint64(minor) // math.MinInt64 too
	}
	digits := strconv.FormatUint(magnitude, 10)
	if len(digits) <= units {
		digits = strings.Repeat("0", units-len(digits)+1) + digits
	}
	whole, fraction := digits[:len(digits)-units], strings.TrimRight(digits[len(digits)-units:], "0")
	if fraction == "" {
		return json.Number(sign + whole)
	}
	return json.Number(sign + whole + "." + fraction)
}
