package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// IdPConfig says which tokens of a shop's identity provider to accept.
type IdPConfig struct {
	// JWKSURL is where the provider publishes its public keys, a JWK Set
	// (SECKILL_JWT_JWKS_URL).
	JWKSURL string
	// Issuer and Audience, when set, must match the tokens' iss and aud
	// (SECKILL_JWT_ISSUER, SECKILL_JWT_AUDIENCE).
	Issuer, Audience string
	// UserClaim names the claim holding the buyer's subject ["sub"]: a string, or a JSON
	// integer read as its decimal; RoleClaim the one holding the role names, a string or
	// a list ["role"] (SECKILL_JWT_USER_CLAIM, SECKILL_JWT_ROLE_CLAIM). A name that is not
	// a claim of the token is read as a path into nested objects ("realm_access.roles").
	UserClaim, RoleClaim string
	// AdminRoles and ServiceRoles are the provider's role names that make a token this
	// service's admin or service (SECKILL_JWT_ADMIN_ROLES, SECKILL_JWT_SERVICE_ROLES);
	// none by default. Any other valid token is a buyer's: a provider's own "admin" is
	// not ours unless it is listed.
	AdminRoles, ServiceRoles []string
	// Leeway is the clock skew allowed on exp and nbf (SECKILL_JWT_LEEWAY).
	Leeway time.Duration
	// RefreshEvery is the least time between two fetches of the key set for a token
	// whose kid is unknown [10 s].
	RefreshEvery time.Duration
	// Client fetches the key set; nil is a client with a 5 s timeout.
	Client *http.Client
}

// IdP verifies the RS256 and ES256 tokens of a shop's identity provider with the keys
// of its JWK Set, fetched and cached by keyfunc (github.com/MicahParks/keyfunc).
type IdP struct {
	cfg  IdPConfig
	keys keyfunc.Keyfunc
}

// Timings of the key set.
const (
	// keyRefresh is how often the key set is fetched again on its own, so a key the
	// provider withdrew stops being trusted.
	keyRefresh = 5 * time.Minute
	// keyWait bounds how long a request with an unknown kid waits for a fetch of the key
	// set (or for the refresh limit to allow one) before its 401.
	keyWait = 2 * time.Second
)

// idpAlgs are the algorithms the provider's tokens may use: each needs a key of its own
// type (RSA, ECDSA P-256), so a token never passes with a key of another type.
var idpAlgs = []string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg()}

// NewIdP starts watching the provider's key set until ctx ends: it is fetched now, every
// few minutes, and when a token names an unknown kid, at most once per RefreshEvery.
// A provider that does not answer does not stop the API: the keys fetched last keep
// working, and tokens of keys never fetched are refused until a fetch succeeds.
func NewIdP(ctx context.Context, cfg IdPConfig) (*IdP, error) {
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.RoleClaim == "" {
		cfg.RoleClaim = "role"
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 10 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 5 * time.Second}
	}
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{cfg.JWKSURL}, keyfunc.Override{
		Client:            cfg.Client,
		HTTPTimeout:       cfg.Client.Timeout,
		RefreshInterval:   keyRefresh,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(cfg.RefreshEvery), 1),
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				slog.Warn("identity provider's key set not fetched; the keys fetched last stay in use", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("identity provider's key set %s: %w", cfg.JWKSURL, err)
	}
	return &IdP{cfg: cfg, keys: keys}, nil
}

func (p *IdP) accepts(alg string) bool { return slices.Contains(idpAlgs, alg) }

// verify checks a token of the provider: its signature with the key its kid names,
// exp, iss and aud when configured, and the user and role claims.
func (p *IdP) verify(token string, now time.Time) (Identity, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), keyWait)
	defer cancel()
	opts := []jwt.ParserOption{jwt.WithValidMethods(idpAlgs), jwt.WithExpirationRequired(), jwt.WithJSONNumber(),
		jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithLeeway(p.cfg.Leeway)}
	if p.cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(p.cfg.Issuer))
	}
	if p.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(p.cfg.Audience))
	}
	c := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(token, c, p.keys.KeyfuncCtx(ctx), opts...); err != nil {
		return Identity{}, time.Time{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	ident, err := identityOfClaims(subject(claim(c, p.cfg.UserClaim)), p.roleOf(claim(c, p.cfg.RoleClaim)))
	if err != nil {
		return Identity{}, time.Time{}, err
	}
	exp, err := c.GetExpirationTime()
	if err != nil || exp == nil {
		return Identity{}, time.Time{}, fmt.Errorf("%w: exp is required", ErrInvalidToken)
	}
	return ident, exp.Time.Add(p.cfg.Leeway), nil
}

// claim is the claim named name, or, when the token has none of that name, the value at
// that dot-separated path into nested objects; nil if neither is there.
func claim(c jwt.MapClaims, name string) any {
	if v, ok := c[name]; ok {
		return v
	}
	var v any = map[string]any(c)
	for _, part := range strings.Split(name, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// subject is a user claim as a subject: a string as it is, a JSON integer as its
// decimal; "" (refused) for anything else, a number with a fraction or an exponent too.
func subject(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		if !strings.ContainsAny(v.String(), ".eE") {
			return v.String()
		}
	}
	return ""
}

// roleOf is the role a role claim grants: admin when it holds a name of AdminRoles,
// else service when it holds one of ServiceRoles, else user (a buyer), whatever else it
// holds or when it is missing.
func (p *IdP) roleOf(v any) string {
	var names []string
	switch v := v.(type) {
	case string:
		names = []string{v}
	case []any:
		for _, n := range v {
			if n, ok := n.(string); ok {
				names = append(names, n)
			}
		}
	}
	holds := func(listed []string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return slices.Contains(listed, n) })
	}
	switch {
	case holds(p.cfg.AdminRoles):
		return RoleAdmin
	case holds(p.cfg.ServiceRoles):
		return RoleService
	}
	return RoleUser
}
