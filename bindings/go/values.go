package outbound

import (
	"net"
	"time"
)

// Properties are the properties of a Track, Page or Screen: any values encoding/json can
// write (maps, slices, numbers, strings, bools, nil, structs with json tags, time.Time).
// The builder helpers are analytics-go's.
type Properties map[string]any

// NewProperties returns empty Properties, for the Set* helpers.
func NewProperties() Properties { return make(Properties, 10) }

// Set sets a property and returns p, so calls chain.
func (p Properties) Set(name string, value any) Properties { p[name] = value; return p }

// SetRevenue sets "revenue".
func (p Properties) SetRevenue(revenue float64) Properties { return p.Set("revenue", revenue) }

// SetCurrency sets "currency".
func (p Properties) SetCurrency(currency string) Properties { return p.Set("currency", currency) }

// SetValue sets "value".
func (p Properties) SetValue(value float64) Properties { return p.Set("value", value) }

// SetPath sets "path" (recognised by Page).
func (p Properties) SetPath(path string) Properties { return p.Set("path", path) }

// SetReferrer sets "referrer" (recognised by Page).
func (p Properties) SetReferrer(referrer string) Properties { return p.Set("referrer", referrer) }

// SetTitle sets "title" (recognised by Page).
func (p Properties) SetTitle(title string) Properties { return p.Set("title", title) }

// SetURL sets "url" (recognised by Page).
func (p Properties) SetURL(url string) Properties { return p.Set("url", url) }

// SetName sets "name".
func (p Properties) SetName(name string) Properties { return p.Set("name", name) }

// SetCategory sets "category".
func (p Properties) SetCategory(category string) Properties { return p.Set("category", category) }

// SetSKU sets "sku".
func (p Properties) SetSKU(sku string) Properties { return p.Set("sku", sku) }

// SetPrice sets "price".
func (p Properties) SetPrice(price float64) Properties { return p.Set("price", price) }

// SetProductId sets "id".
func (p Properties) SetProductId(id string) Properties { return p.Set("id", id) }

// SetOrderId sets "orderId".
func (p Properties) SetOrderId(id string) Properties { return p.Set("orderId", id) }

// SetTotal sets "total".
func (p Properties) SetTotal(total float64) Properties { return p.Set("total", total) }

// SetSubtotal sets "subtotal".
func (p Properties) SetSubtotal(subtotal float64) Properties { return p.Set("subtotal", subtotal) }

// SetShipping sets "shipping".
func (p Properties) SetShipping(shipping float64) Properties { return p.Set("shipping", shipping) }

// SetTax sets "tax".
func (p Properties) SetTax(tax float64) Properties { return p.Set("tax", tax) }

// SetDiscount sets "discount".
func (p Properties) SetDiscount(discount float64) Properties { return p.Set("discount", discount) }

// SetCoupon sets "coupon".
func (p Properties) SetCoupon(coupon string) Properties { return p.Set("coupon", coupon) }

// SetProducts sets "products".
func (p Properties) SetProducts(products ...Product) Properties { return p.Set("products", products) }

// SetRepeat sets "repeat".
func (p Properties) SetRepeat(repeat bool) Properties { return p.Set("repeat", repeat) }

// Product is an item of the e-commerce "products" property.
type Product struct {
	ID    string  `json:"id,omitempty"`
	SKU   string  `json:"sku,omitempty"`
	Name  string  `json:"name,omitempty"`
	Price float64 `json:"price"`
}

// Traits are the traits of an Identify (of the user) or a Group (of the group); values as
// for Properties. The builder helpers are analytics-go's.
type Traits map[string]any

// NewTraits returns empty Traits, for the Set* helpers.
func NewTraits() Traits { return make(Traits, 10) }

// Set sets a trait and returns t, so calls chain.
func (t Traits) Set(field string, value any) Traits { t[field] = value; return t }

// SetAddress sets "address".
func (t Traits) SetAddress(address string) Traits { return t.Set("address", address) }

// SetAge sets "age".
func (t Traits) SetAge(age int) Traits { return t.Set("age", age) }

// SetAvatar sets "avatar".
func (t Traits) SetAvatar(url string) Traits { return t.Set("avatar", url) }

// SetBirthday sets "birthday" (sent as a UTC timestamp with milliseconds).
func (t Traits) SetBirthday(date time.Time) Traits { return t.Set("birthday", date) }

// SetCreatedAt sets "createdAt" (sent as a UTC timestamp with milliseconds).
func (t Traits) SetCreatedAt(date time.Time) Traits { return t.Set("createdAt", date) }

// SetDescription sets "description".
func (t Traits) SetDescription(desc string) Traits { return t.Set("description", desc) }

// SetEmail sets "email".
func (t Traits) SetEmail(email string) Traits { return t.Set("email", email) }

// SetFirstName sets "firstName".
func (t Traits) SetFirstName(firstName string) Traits { return t.Set("firstName", firstName) }

// SetGender sets "gender".
func (t Traits) SetGender(gender string) Traits { return t.Set("gender", gender) }

// SetLastName sets "lastName".
func (t Traits) SetLastName(lastName string) Traits { return t.Set("lastName", lastName) }

// SetName sets "name".
func (t Traits) SetName(name string) Traits { return t.Set("name", name) }

// SetPhone sets "phone".
func (t Traits) SetPhone(phone string) Traits { return t.Set("phone", phone) }

// SetTitle sets "title".
func (t Traits) SetTitle(title string) Traits { return t.Set("title", title) }

// SetUsername sets "username".
func (t Traits) SetUsername(username string) Traits { return t.Set("username", username) }

// SetWebsite sets "website".
func (t Traits) SetWebsite(url string) Traits { return t.Set("website", url) }

// Integrations says which destinations get a message: destination name to true or false
// (or an object of options). Keys are case-sensitive: "Webhooks": false keeps a message from
// the webhooks; "All": false sends it nowhere but where a name is set to true.
type Integrations map[string]any

// NewIntegrations returns empty Integrations, for the helpers.
func NewIntegrations() Integrations { return make(Integrations, 10) }

// EnableAll sets "All" to true.
func (i Integrations) EnableAll() Integrations { return i.Set("All", true) }

// DisableAll sets "All" to false.
func (i Integrations) DisableAll() Integrations { return i.Set("All", false) }

// Enable sets a destination to true.
func (i Integrations) Enable(name string) Integrations { return i.Set(name, true) }

// Disable sets a destination to false.
func (i Integrations) Disable(name string) Integrations { return i.Set(name, false) }

// Set sets a destination to a value and returns i, so calls chain.
func (i Integrations) Set(name string, value any) Integrations { i[name] = value; return i }

// Context is extra information about the call (device, IP, campaign, ...), in analytics-go's
// shape: zero fields are left out, and Extra adds any other keys (a field that is set wins
// over an Extra key of the same name). context.library is always set by outbound.
type Context struct {
	App       AppInfo
	Campaign  CampaignInfo
	Device    DeviceInfo
	Library   LibraryInfo // replaced by outbound's own {name, version}
	Location  LocationInfo
	Network   NetworkInfo
	OS        OSInfo
	Page      PageInfo
	Referrer  ReferrerInfo
	Screen    ScreenInfo
	IP        net.IP
	Direct    bool
	Locale    string
	GroupID   string
	Timezone  string
	UserAgent string
	Traits    Traits
	Extra     map[string]any
}

// AppInfo is context.app.
type AppInfo struct {
	Name      string `json:"name,omitempty"`
	Version   string `json:"version,omitempty"`
	Build     string `json:"build,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// CampaignInfo is context.campaign.
type CampaignInfo struct {
	Name    string `json:"name,omitempty"`
	Source  string `json:"source,omitempty"`
	Medium  string `json:"medium,omitempty"`
	Term    string `json:"term,omitempty"`
	Content string `json:"content,omitempty"`
}

// DeviceInfo is context.device.
type DeviceInfo struct {
	Id            string `json:"id,omitempty"`
	Manufacturer  string `json:"manufacturer,omitempty"`
	Model         string `json:"model,omitempty"`
	Name          string `json:"name,omitempty"`
	Type          string `json:"type,omitempty"`
	Version       string `json:"version,omitempty"`
	AdvertisingID string `json:"advertisingId,omitempty"`
}

// LibraryInfo is context.library (always outbound's own on the wire).
type LibraryInfo struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// LocationInfo is context.location.
type LocationInfo struct {
	City      string  `json:"city,omitempty"`
	Country   string  `json:"country,omitempty"`
	Region    string  `json:"region,omitempty"`
	Latitude  float64 `json:"latitude,omitempty"`
	Longitude float64 `json:"longitude,omitempty"`
	Speed     float64 `json:"speed,omitempty"`
}

// NetworkInfo is context.network.
type NetworkInfo struct {
	Bluetooth bool   `json:"bluetooth,omitempty"`
	Cellular  bool   `json:"cellular,omitempty"`
	WIFI      bool   `json:"wifi,omitempty"`
	Carrier   string `json:"carrier,omitempty"`
}

// OSInfo is context.os.
type OSInfo struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// PageInfo is context.page.
type PageInfo struct {
	Hash     string `json:"hash,omitempty"`
	Path     string `json:"path,omitempty"`
	Referrer string `json:"referrer,omitempty"`
	Search   string `json:"search,omitempty"`
	Title    string `json:"title,omitempty"`
	URL      string `json:"url,omitempty"`
}

// ReferrerInfo is context.referrer.
type ReferrerInfo struct {
	Type string `json:"type,omitempty"`
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
	Link string `json:"link,omitempty"`
}

// ScreenInfo is context.screen.
type ScreenInfo struct {
	Density int `json:"density,omitempty"`
	Width   int `json:"width,omitempty"`
	Height  int `json:"height,omitempty"`
}

// object is the context as a JSON object: Extra first, then every field that is set.
func (c *Context) object() map[string]any {
	m := make(map[string]any, len(c.Extra)+4)
	for k, v := range c.Extra {
		m[k] = v
	}
	set := func(key string, v any, zero bool) {
		if !zero {
			m[key] = v
		}
	}
	set("app", c.App, c.App == AppInfo{})
	set("campaign", c.Campaign, c.Campaign == CampaignInfo{})
	set("device", c.Device, c.Device == DeviceInfo{})
	set("library", c.Library, c.Library == LibraryInfo{})
	set("location", c.Location, c.Location == LocationInfo{})
	set("network", c.Network, c.Network == NetworkInfo{})
	set("os", c.OS, c.OS == OSInfo{})
	set("page", c.Page, c.Page == PageInfo{})
	set("referrer", c.Referrer, c.Referrer == ReferrerInfo{})
	set("screen", c.Screen, c.Screen == ScreenInfo{})
	set("ip", c.IP, len(c.IP) == 0)
	set("direct", c.Direct, !c.Direct)
	set("locale", c.Locale, c.Locale == "")
	set("groupId", c.GroupID, c.GroupID == "")
	set("timezone", c.Timezone, c.Timezone == "")
	set("userAgent", c.UserAgent, c.UserAgent == "")
	set("traits", c.Traits, len(c.Traits) == 0)
	return m
}
